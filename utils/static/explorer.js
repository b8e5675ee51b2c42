// The item explorers of report.html and leaderboard.html, inlined into the page (no network, works from file://).
// Each .explorer's data is a JSON script block (data-source); rows are rendered one page at a time, and every
// text from a run is inserted with textContent, never as markup. Columns are found by name in data.columns:
// a column this script has no own cell for is shown, sortable and searchable under its name.
(function () {
  "use strict";
  var TEMPLATE_SYSTEM_TITLE = "added by the model's chat template, not the task";
  var PREVIEW = 120;  // characters of a long text in a table cell (the detail shows it all)
  var KINDS = {
    items: {
      filters: ["component", "gold", "pred", "outcome"],
      // Columns drawn by the detail view or the last cell ("reply / top choice"), not as table columns.
      own: ["reply", "choices", "extras", "redacted", "details", "invalid_reason", "original"],
      labels: {doc_id: "doc id", parse_step: "parse step"},
      what: "items"
    },
    pairs: {
      filters: ["which", "component", "gold_a"],
      // doc_id_b and gold_b share A's cell; each side's pred, reply and choices share that side's cell.
      own: ["doc_id_b", "question_b", "gold_b", "outcome_b", "pred_a", "pred_b", "reply_a", "reply_b", "choices_a",
            "choices_b", "original_a", "original_b"],
      labels: {doc_id_a: "doc id (A / B)", question_a: "question", gold_a: "gold", outcome_a: "outcome (A / B)"},
      what: "discordant items"
    }
  };
  var INSTRUCTION_NOTE = "every prompt of this task begins with it; each item shows its question, the rest of its prompt";
  function el(tag, attributes, text) {
    var node = document.createElement(tag);
    if (attributes) { Object.keys(attributes).forEach(function (k) { node.setAttribute(k, attributes[k]); }); }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  // A text the page shortened: [head, tail, whole length].
  function isShortened(t) { return Array.isArray(t) && t.length === 3 && typeof t[2] === "number"; }
  function plain(t) {
    if (t === null || t === undefined) { return ""; }
    if (typeof t === "string") { return t; }
    if (isShortened(t)) { return t[0] + "\n" + t[1]; }
    if (Array.isArray(t)) { return t.map(function (m) { return m && m.content !== undefined ? m.role + ": " + plain(m.content) : plain(m); }).join("\n"); }
    if (typeof t === "object") { return Object.keys(t).map(function (k) { return k + ": " + plain(t[k]); }).join("\n"); }
    return String(t);
  }
  function isText(v) { return (typeof v === "string" && v.length > PREVIEW) || isShortened(v) || (Array.isArray(v) && v.length > 0 && v[0] !== null && typeof v[0] === "object" && "role" in v[0]); }
  function isEmpty(v) { return v === null || v === undefined || v === "" || (Array.isArray(v) && v.length === 0); }
  // A probability as the page shows it: three decimals.
  function probability(p) { return p === null || p === undefined ? "undefined" : p.toFixed(3); }
  // A pre of text t; each occurrence of mark (the chat template's own system message) in its own span.
  function pre(css, t, mark) {
    if (!mark) { return el("pre", {"class": css}, t); }
    var node = el("pre", {"class": css});
    String(t).split(mark).forEach(function (part, i) {
      if (i > 0) { node.appendChild(el("span", {"class": "template-system", "title": TEMPLATE_SYSTEM_TITLE}, mark)); }
      if (part) { node.appendChild(document.createTextNode(part)); }
    });
    return node;
  }
  function textBlock(t, where, what, mark) {
    var box = el("div", {"class": "text-block", "data-what": what});
    if (t === null || t === undefined) { box.appendChild(el("span", {"class": "muted"}, "(none)")); return box; }
    if (typeof t === "string") { box.appendChild(pre("text whole", t, mark)); return box; }
    box.appendChild(pre("text head", t[0], mark));
    box.appendChild(el("div", {"class": "shortened", "data-length": String(t[2])},
      "[shortened in this page: the " + what + " has " + t[2] + " characters; " + where + " holds it whole]"));
    box.appendChild(pre("text tail", t[1], mark));
    return box;
  }
  function promptBlock(p, where, mark, what) {
    if (!Array.isArray(p) || isShortened(p)) { return textBlock(p, where, what || "prompt", mark); }
    var box = el("div", {"class": "messages", "data-what": what || "prompt"});
    p.forEach(function (m) {
      box.appendChild(el("div", {"class": "role"}, m.role));
      box.appendChild(textBlock(m.content, where, "message", mark));
    });
    return box;
  }
  // Each task's instruction (shared by its prompts), once, each folded under a line that says what it is.
  function instructionsBlock(instructions, mark) {
    var box = el("div", {"class": "instruction-list"});
    Object.keys(instructions || {}).forEach(function (task) {
      var d = el("details", {"class": "instruction", "data-task": task});
      d.appendChild(el("summary", null, "Instruction of " + task + ": " + INSTRUCTION_NOTE));
      d.appendChild(promptBlock(instructions[task], "the items file", mark, "instruction"));
      box.appendChild(d);
    });
    return box;
  }
  // A log-likelihood item's choices in a table cell: one line each, its probability to three decimals.
  function choiceLines(choices) {
    var box = el("div", {"class": "choice-lines"});
    choices.forEach(function (c) {
      box.appendChild(el("div", null, plain(c[0]).trim() + "  " + probability(c[2])));
    });
    return box;
  }
  function choicesTable(choices, where) {
    var t = el("table", {"class": "choices"}), tb = el("tbody"), hr = el("tr");
    ["choice", "log-likelihood", "probability"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
    tb.appendChild(hr);
    choices.forEach(function (c) {
      var tr = el("tr");
      var cell = el("td");  // whole: quoted, so that its spaces show; shortened: head and tail, marked
      if (typeof c[0] === "string") { cell.textContent = JSON.stringify(c[0]); } else { cell.appendChild(textBlock(c[0], where, "choice")); }
      tr.appendChild(cell);
      tr.appendChild(el("td", {"class": "num"}, c[1]));
      tr.appendChild(el("td", {"class": "num"}, probability(c[2])));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    return t;
  }
  // A label the page shows (the one the model saw) with the one it was scored as, when they differ.
  function labelText(shown, scored) {
    return scored === null || scored === undefined || String(scored) === String(shown) ? String(shown) : shown + " (original index " + scored + ")";
  }
  function kvTable(entries) {
    var t = el("table"), body = el("tbody");
    entries.forEach(function (e) {
      var tr = el("tr"); tr.appendChild(el("th", null, e[0]));
      var td = el("td"); if (e[1] instanceof Node) { td.appendChild(e[1]); } else { td.textContent = e[1] === null || e[1] === undefined ? "none" : (typeof e[1] === "object" ? JSON.stringify(e[1]) : String(e[1])); }
      tr.appendChild(td); body.appendChild(tr);
    });
    t.appendChild(body); return t;
  }
  function counts(values) {
    var c = {}; values.forEach(function (v) { c[v] = (c[v] || 0) + 1; }); return c;
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return plain(a) < plain(b) ? -1 : plain(a) > plain(b) ? 1 : 0;
  }

  function Explorer(root) {
    var data = JSON.parse(document.getElementById(root.getAttribute("data-source")).textContent);
    var PAGE = Number(root.getAttribute("data-rows-per-page")) || 50;
    var kind = KINDS[data.kind];
    var col = {}; data.columns.forEach(function (name, i) { col[name] = i; });
    var rows = data.rows, order = rows.map(function (_, i) { return i; });
    var shown = order.slice(), page = 0, sortKey = null, sortDir = 1, openIndex = null, haystack = null;
    var isItems = data.kind === "items";
    var templateSystem = typeof data.template_system === "string" ? data.template_system : null;
    var filterNames = kind.filters.filter(function (name) { return name in col; });
    // The table's columns by name: every column but those drawn by their own cells, and none that is empty in
    // every row.
    var named = data.columns.filter(function (name) {
      return kind.own.indexOf(name) === -1 && rows.some(function (r) { return !isEmpty(r[col[name]]); });
    });
    // Each run's model saw its own labels (MillerQA shuffles the options per model): then gold is A's / B's.
    var labels = Object.assign({}, kind.labels);
    if (!isItems && rows.some(function (r) { return r[col.gold_b] !== null; })) {
      labels.gold_a = "gold (A / B)";
      filterNames = filterNames.filter(function (name) { return name !== "gold_a"; });  // A's alone would mislead
    }
    function label(name) { return labels[name] || name.replace(/_/g, " "); }
    // A column with one value in every row (e.g. the section's one task) is said once above the table.
    var constant = named.filter(function (name) {
      var first = rows.length > 1 ? rows[0][col[name]] : null;
      return first !== null && typeof first !== "object" && !isText(first) &&
        rows.every(function (r) { return r[col[name]] === first; });
    });
    var shownColumns = named.filter(function (name) { return constant.indexOf(name) === -1; });
    var tableColumns = (isItems ? [["#", null]] : []).concat(shownColumns.map(function (name) { return [label(name), name]; }));
    tableColumns = tableColumns.concat(isItems ? [["reply / top choice", null]] : [["A: " + data.a.label, null], ["B: " + data.b.label, null]]);
    var bounded = root.querySelector(".bounded");  // the page's note that it holds only some rows: kept
    root.textContent = "";
    if (data.instructions) { root.appendChild(instructionsBlock(data.instructions, templateSystem)); }
    var controls = el("div", {"class": "controls"}), selects = {};
    filterNames.forEach(function (name) {
      var lab = el("label", null, label(name) + " ");
      var select = el("select", {"class": "filter", "data-filter": name});
      var all = el("option", {"value": ""}, "all (" + rows.length + ")"); select.appendChild(all);
      var c = counts(rows.map(function (r) { return String(r[col[name]]); }));
      Object.keys(c).sort().forEach(function (v) { select.appendChild(el("option", {"value": v}, v + " (" + c[v] + ")")); });
      select.addEventListener("change", function () { apply(); });
      lab.appendChild(select); controls.appendChild(lab); selects[name] = select;
    });
    var search = el("input", {"type": "search", "class": "search", "placeholder": "search every column"});
    var timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(apply, 200); });
    controls.appendChild(search);
    var summary = el("div", {"class": "summary"});
    var pager = el("div", {"class": "pager"});
    var table = el("table", {"class": "items"}), head = el("thead"), body = el("tbody"), headRow = el("tr");
    tableColumns.forEach(function (c) {
      var th = el("th");
      if (c[1]) {
        var button = el("button", {"type": "button", "data-sort": c[1]}, c[0]);
        button.addEventListener("click", function () {
          sortDir = sortKey === c[1] ? -sortDir : 1; sortKey = c[1]; apply();
        });
        th.appendChild(button);
      } else { th.textContent = c[0]; }
      headRow.appendChild(th);
    });
    head.appendChild(headRow); table.appendChild(head); table.appendChild(body);
    var detail = el("div", {"class": "detail", "hidden": ""});
    if (bounded) { root.appendChild(bounded); }
    root.appendChild(controls);
    if (constant.length) {
      root.appendChild(el("div", {"class": "constant muted"}, "Every " + kind.what.replace(/s$/, "") + ": " +
        constant.map(function (name) { return label(name) + " " + rows[0][col[name]]; }).join("; ")));
    }
    root.appendChild(summary); root.appendChild(pager);
    root.appendChild(table); root.appendChild(detail);
    root.appendChild(el("p", {"class": "muted"}, isItems
      ? "Texts longer than " + data.limit + " characters are shortened in this page (head and tail shown, marked); " + data.file + " holds every item whole, one line each, in this order."
      : "Answers longer than " + data.limit + " characters are shortened in this page (marked); each run's items file holds them whole."));

    function where(i) { return isItems ? data.file + " line " + (i + 1) : "the run's items file"; }
    function apply() {
      var wanted = {};
      filterNames.forEach(function (name) { wanted[name] = selects[name].value; });
      var needle = search.value.toLowerCase();
      if (needle && haystack === null) {
        haystack = rows.map(function (r) { return r.map(plain).join("\n").toLowerCase(); });
      }
      shown = order.filter(function (i) {
        var r = rows[i];
        for (var k = 0; k < filterNames.length; k++) {
          var name = filterNames[k];
          if (wanted[name] !== "" && String(r[col[name]]) !== wanted[name]) { return false; }
        }
        return !needle || haystack[i].indexOf(needle) !== -1;
      });
      if (sortKey !== null) {
        shown.sort(function (x, y) { return sortDir * compare(rows[x][col[sortKey]], rows[y][col[sortKey]]) || x - y; });
      }
      page = 0; render();
    }
    // The table cell of a named column: a preview of a long text, the run's value as text otherwise.
    function namedCell(r, name) {
      var v = r[col[name]];
      if (name === "question_a" || name === "question") {
        var td = el("td", {"class": "question"});
        td.appendChild(el("div", {"class": "clamp"}, plain(v).slice(0, 3 * PREVIEW)));
        return td;
      }
      if (isText(v)) { return el("td", {"class": "preview"}, plain(v).slice(0, PREVIEW)); }
      if (name === "outcome") { return el("td", {"class": "outcome-" + v}, v); }
      if (name === "outcome_a") {
        var both = el("td");
        both.appendChild(el("span", {"class": "outcome-" + v}, v)); both.appendChild(document.createTextNode(" / "));
        both.appendChild(el("span", {"class": "outcome-" + r[col.outcome_b]}, r[col.outcome_b]));
        return both;
      }
      if (name === "parse_step") { return el("td", null, v || (r[col.invalid_reason] ? "none" : "")); }
      if (name === "doc_id_a") { return el("td", null, v + " / " + r[col.doc_id_b]); }
      if (name === "gold_a") { return el("td", null, r[col.gold_b] === null ? v : v + " / " + r[col.gold_b]); }
      return el("td", null, v !== null && typeof v === "object" ? plain(v) : v);
    }
    function render() {
      var pages = Math.max(1, Math.ceil(shown.length / PAGE));
      summary.textContent = "";
      summary.appendChild(el("span", {"class": "n-shown"}, String(shown.length)));
      summary.appendChild(document.createTextNode(" of " + rows.length + " " + kind.what + " shown"));
      var by = counts(shown.map(function (i) { return String(rows[i][col[isItems ? "outcome" : "which"]]); }));
      Object.keys(by).sort().forEach(function (k) {
        summary.appendChild(document.createTextNode("; " + k + ": "));
        summary.appendChild(el("span", {"class": "count", "data-value": k}, String(by[k])));
      });
      pager.textContent = "";
      var prev = el("button", {"type": "button", "class": "prev"}, "previous"), next = el("button", {"type": "button", "class": "next"}, "next");
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
      prev.addEventListener("click", function () { page -= 1; render(); });
      next.addEventListener("click", function () { page += 1; render(); });
      pager.appendChild(prev); pager.appendChild(el("span", {"class": "page"}, "page " + (page + 1) + " of " + pages)); pager.appendChild(next);
      body.textContent = "";
      shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (i) {
        var r = rows[i], tr = el("tr", {"data-index": String(i)});
        if (i === openIndex) { tr.className = "open"; }
        if (isItems) { tr.appendChild(el("td", null, i + 1)); }
        shownColumns.forEach(function (name) { tr.appendChild(namedCell(r, name)); });
        if (isItems) {
          var choices = r[col.choices], preview;
          if (choices.length) {
            var best = choices.reduce(function (a, c) { return c[2] !== null && (a === null || c[2] > a[2]) ? c : a; }, null);
            preview = best === null ? "no probabilities" : plain(best[0]).slice(0, PREVIEW) + " (p=" + probability(best[2]) + ")";
          } else { preview = plain(r[col.reply]).slice(0, PREVIEW); }
          tr.appendChild(el("td", {"class": "preview"}, preview));
        } else {
          ["a", "b"].forEach(function (side) {
            var td = el("td", {"class": "answer"});
            td.appendChild(el("div", {"class": "pred"}, "pred: " + r[col["pred_" + side]]));
            td.appendChild(answerBlock(r, side));
            tr.appendChild(td);
          });
        }
        tr.addEventListener("click", function () { open(i); detail.scrollIntoView({block: "start"}); });
        body.appendChild(tr);
      });
    }
    function link(href, text) { return el("a", {"href": href}, text); }
    // A side's answer in the pairs' table: its choices (one line each), else its reply.
    function answerBlock(r, side) {
      var choices = r[col["choices_" + side]];
      return choices.length ? choiceLines(choices) : textBlock(r[col["reply_" + side]], "the run's items file", "reply");
    }
    // Named columns the detail view has no own place for (e.g. a column added to the data), each by its name.
    function otherColumns(r, i, known) {
      var entries = named.filter(function (name) { return known.indexOf(name) === -1; }).map(function (name) {
        var v = r[col[name]]; return [label(name), isText(v) ? textBlock(v, where(i), label(name)) : v];
      });
      if (entries.length) { detail.appendChild(kvTable(entries)); }
    }
    function open(i) {
      openIndex = i; var r = rows[i];
      detail.textContent = ""; detail.hidden = false; detail.setAttribute("data-index", String(i));
      if (isItems) {
        var original = r[col.original] || [null, null];
        detail.appendChild(el("h4", null, r[col.task] + ", doc " + r[col.doc_id] + " (" + data.file + " line " + (i + 1) + ")"));
        detail.appendChild(el("h5", null, data.instructions && data.instructions[r[col.task]] ? "Question (the prompt after the task's instruction, above)" : "Prompt"));
        detail.appendChild(promptBlock(r[col.question], where(i), templateSystem, "question"));
        detail.appendChild(kvTable([["component", r[col.component]], ["gold", labelText(r[col.gold], original[0])],
          ["pred", labelText(r[col.pred], original[1])],
          ["outcome", r[col.outcome]], ["parse step", r[col.parse_step] || "none"], ["invalid reason", r[col.invalid_reason]],
          ["masked credentials in", r[col.redacted].length ? r[col.redacted].join(", ") : "nothing"]]));
        otherColumns(r, i, ["task", "doc_id", "component", "question", "gold", "pred", "outcome", "parse_step"]);
        if (r[col.choices].length) {
          detail.appendChild(el("h5", null, "Choices (probability: softmax of the log-likelihoods)"));
          detail.appendChild(choicesTable(r[col.choices], where(i)));
        } else {
          detail.appendChild(el("h5", null, "Reply"));
          var reply = textBlock(r[col.reply], where(i), "reply"); reply.classList.add("reply"); detail.appendChild(reply);
        }
        var extras = Object.keys(r[col.extras]).map(function (k) { return [k, r[col.extras][k]]; });
        var details = Object.keys(r[col.details]).map(function (k) { var v = r[col.details][k]; return [k, typeof v === "string" || isShortened(v) ? textBlock(v, where(i), k) : v]; });
        if (extras.length) { detail.appendChild(el("h5", null, "Per-item rates")); detail.appendChild(kvTable(extras)); }
        if (details.length) { detail.appendChild(el("h5", null, "The benchmark's own fields")); detail.appendChild(kvTable(details)); }
        var p = el("p"); p.appendChild(link(data.file, "the items file")); p.appendChild(document.createTextNode(" holds this item whole (line " + (i + 1) + ")."));
        detail.appendChild(p);
      } else {
        detail.appendChild(el("h4", null, r[col.which] + ": " + r[col.task] + ", doc " + r[col.doc_id_a] + " / " + r[col.doc_id_b]));
        detail.appendChild(el("h5", null, r[col.question_b] === null ? "Question" : "Question (A's prompt)"));
        detail.appendChild(promptBlock(r[col.question_a], "the run's items file", null, "question"));
        if (r[col.question_b] !== null) {
          detail.appendChild(el("h5", null, "Question (B's prompt)"));
          detail.appendChild(promptBlock(r[col.question_b], "the run's items file", null, "question"));
        }
        otherColumns(r, i, ["which", "task", "doc_id_a", "component", "question_a", "gold_a", "outcome_a"]);
        var side = el("div", {"class": "side"});
        ["a", "b"].forEach(function (s) {
          var box = el("div", {"class": "run-" + s});
          var original = r[col["original_" + s]] || [null, null];
          var gold = s === "b" && r[col.gold_b] !== null ? r[col.gold_b] : r[col.gold_a];
          box.appendChild(el("h5", null, s.toUpperCase() + ": " + data[s].label));
          box.appendChild(kvTable([["gold", labelText(gold, original[0])], ["pred", labelText(r[col["pred_" + s]], original[1])],
            ["outcome", r[col["outcome_" + s]]]]));
          var choices = r[col["choices_" + s]];
          if (choices.length) { box.appendChild(choicesTable(choices, "the run's items file")); }
          else { var reply = textBlock(r[col["reply_" + s]], "the run's items file", "reply"); reply.classList.add("reply"); box.appendChild(reply); }
          var p = el("p");
          if (data[s].report) {
            p.appendChild(link(data[s].report + "#item=" + encodeURIComponent(data.section) + "/" + encodeURIComponent(r[col.task]) + "/" + r[col["doc_id_" + s]], "open in " + s.toUpperCase() + "'s report"));
            p.appendChild(document.createTextNode(" · "));
            p.appendChild(link(data[s].items, s.toUpperCase() + "'s items file"));
          } else {
            p.textContent = "No report of " + s.toUpperCase() + " beside its run: python -m lm_eval_tasks report RUN writes one there.";
          }
          box.appendChild(p); side.appendChild(box);
        });
        detail.appendChild(side);
      }
      render();
    }
    this.openItem = function (task, docId) {
      if (!isItems) { return false; }
      for (var i = 0; i < rows.length; i++) {
        if (String(rows[i][col.task]) === task && String(rows[i][col.doc_id]) === docId) {
          filterNames.forEach(function (name) { selects[name].value = ""; }); search.value = ""; sortKey = null;
          shown = order.slice(); page = Math.floor(i / PAGE); open(i); detail.scrollIntoView(); return true;
        }
      }
      return false;
    };
    this.section = data.section;
    apply();
  }

  Array.prototype.forEach.call(document.querySelectorAll(".instructions[data-source]"), function (root) {
    try { root.appendChild(instructionsBlock(JSON.parse(document.getElementById(root.getAttribute("data-source")).textContent), null)); }
    catch (error) { root.textContent = "The instructions could not be shown: " + error; }
  });
  var explorers = [];
  Array.prototype.forEach.call(document.querySelectorAll(".explorer"), function (root) {
    try { explorers.push(new Explorer(root)); }
    catch (error) { root.textContent = "The item explorer could not start: " + error; }
  });
  function follow() {
    var match = /^#item=([^/]*)\/([^/]*)\/(.*)$/.exec(location.hash);
    if (!match) { return; }
    var section = decodeURIComponent(match[1]), task = decodeURIComponent(match[2]), doc = decodeURIComponent(match[3]);
    explorers.forEach(function (x) { if (x.section === section && x.openItem) { x.openItem(task, doc); } });
  }
  window.addEventListener("hashchange", follow);
  follow();
})();
