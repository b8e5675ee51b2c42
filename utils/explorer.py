"""Item explorers inside a self-contained page: the items of a report section, or two runs' discordant items.

The data goes into the page as JSON in a ``<script type="application/json">`` block that nothing from a run
can close or comment out (:func:`script_json`: ``<``, ``>``, ``&``, U+2028 and U+2029 are written as JSON
escapes; control characters and lone surrogates already are), and one inline vanilla script (:data:`SCRIPT`)
renders it lazily, one page of rows at a time: no network, works from ``file://``. Every text from a run is
inserted with ``textContent``; the script never builds HTML from strings.

Long texts are shortened in the page to keep it loadable (:func:`text_limit`: a character budget per page,
shared by the items' prompts, replies and choices, never less than :data:`MIN_SHOWN` characters a text): a shortened
text keeps its head and its tail (where a final answer usually stands), and the page says how many characters
it left out and which line of the items file holds the whole text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Characters of prompt, reply and choice text one explorer may embed, in all (a page of about 15-40 MB at most) ...
TEXT_BUDGET = 12_000_000
# ... but never fewer than this many characters of any one text.
MIN_SHOWN = 600
HEAD_SHARE = 2 / 3  # of a shortened text's shown characters, from its start (the rest from its end)
ROWS_PER_PAGE = 50

_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def script_json(element_id: str, data: Any) -> str:
    """``data`` as a JSON script block: no run text can end the block (``</script>``), open a comment
    (``<!--``) or break a JavaScript reader (U+2028/2029); the page reads it with ``JSON.parse``."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = _UNSAFE_IN_SCRIPT.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return f'<script type="application/json" id="{_esc(element_id)}">{text}</script>'


def text_limit(n_texts: int, budget: int = TEXT_BUDGET) -> int:
    """Characters shown of each text when ``n_texts`` texts share ``budget`` (at least :data:`MIN_SHOWN`)."""
    return max(MIN_SHOWN, budget // max(n_texts, 1))


def shown_text(text: str | None, limit: int) -> str | list[Any] | None:
    """A text as the page holds it: whole when at most ``limit`` characters, else ``[head, tail, length]``."""
    if text is None or len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    return [text[:head], text[len(text) - (limit - head) :], len(text)]


def _shown_prompt(prompt: Any, limit: int) -> Any:
    if isinstance(prompt, list):
        return [{"role": message["role"], "content": shown_text(message["content"], limit)} for message in prompt]
    return shown_text(prompt, limit)


def _shown_value(value: Any, limit: int) -> Any:
    """A benchmark's own field for the page: its strings shortened, anything else as JSON has it."""
    if isinstance(value, str):
        return shown_text(value, limit)
    if isinstance(value, Mapping):
        return {str(key): _shown_value(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown_value(item, limit) for item in value]
    return value


ITEM_COLUMNS = (
    "task",
    "item_id",
    "doc_id",
    "component",
    "gold",
    "pred",
    "outcome",
    "parse_step",
    "invalid_reason",
    "prompt",
    "reply",
    "choices",
    "extras",
    "redacted",
    "details",
)
_KNOWN = frozenset(ITEM_COLUMNS) | {"doc_hash"}


def items_data(
    section: str,
    title: str,
    records: Sequence[Mapping[str, Any]],
    items_file: str,
    template_system: str | None = None,
) -> dict[str, Any]:
    """The page data of one section's items (records: items_<section>.jsonl's, in its line order).

    ``template_system``: the system message the run's chat template added by itself, marked wherever a prompt
    shows it.
    """
    limit = text_limit(sum(2 + len(record["choices"]) for record in records))  # a prompt, a reply, each choice
    rows = []
    for record in records:
        details = {key: value for key, value in record.items() if key not in _KNOWN}
        rows.append(
            [
                record["task"],
                shown_text(record["item_id"], limit),
                record["doc_id"],
                record["component"],
                record["gold"],
                record["pred"],
                record["outcome"],
                record["parse_step"],
                record["invalid_reason"],
                _shown_prompt(record["prompt"], limit),
                shown_text(record["reply"], limit),
                [[shown_text(c["choice"], limit), c["loglikelihood"], c["probability"]] for c in record["choices"]],
                record["extras"],
                record["redacted"],
                _shown_value(details, limit),
            ]
        )
    data = {
        "kind": "items",
        "section": section,
        "title": title,
        "file": items_file,
        "limit": limit,
        "columns": list(ITEM_COLUMNS),
        "rows": rows,
    }
    if template_system:
        data["template_system"] = template_system
    return data


def answer_text(record: Mapping[str, Any]) -> str:
    """What an item answered, as text: the reply of a generation, each choice's probability for a log-likelihood
    item."""
    if record["choices"]:
        return "\n".join(
            f"{c['choice']!r}: probability {c['probability'] if c['probability'] is None else round(c['probability'], 4)}"
            f", log-likelihood {c['loglikelihood']}"
            for c in record["choices"]
        )
    return record["reply"] if record["reply"] is not None else ""


# One discordant item of two runs, on its own: which item, the question as A logged it (prompt_b: B's, None when
# it is A's), and each run's prediction, outcome and answer (answer_text).
PAIR_FIELDS = (
    "task",
    "item_id",
    "doc_id_a",
    "doc_id_b",
    "component",
    "gold",
    "prompt_a",
    "prompt_b",
    "pred_a",
    "pred_b",
    "outcome_a",
    "outcome_b",
    "answer_a",
    "answer_b",
)
PAIR_COLUMNS = ("which", *PAIR_FIELDS)
# Texts of one discordant item (two prompts at most, two answers), for its share of a text budget.
PAIR_TEXTS = 4
A_ONLY, B_ONLY = "A right, B wrong", "B right, A wrong"


def pair_record(ra: Mapping[str, Any], rb: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """One discordant item from both runs' item records (A's, B's), PAIR_FIELDS in order, its texts shortened to
    ``limit`` characters each (:func:`shown_text`)."""
    return {
        "task": ra["task"],
        "item_id": shown_text(ra["item_id"], limit),
        "doc_id_a": ra["doc_id"],
        "doc_id_b": rb["doc_id"],
        "component": ra["component"],
        "gold": ra["gold"],
        "prompt_a": _shown_prompt(ra["prompt"], limit),
        "prompt_b": None if rb["prompt"] == ra["prompt"] else _shown_prompt(rb["prompt"], limit),
        "pred_a": ra["pred"],
        "pred_b": rb["pred"],
        "outcome_a": ra["outcome"],
        "outcome_b": rb["outcome"],
        "answer_a": shown_text(answer_text(ra), limit),
        "answer_b": shown_text(answer_text(rb), limit),
    }


def pairs_data(
    section: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    a_only: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    b_only: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> dict[str, Any]:
    """The page data of two runs' discordant items (pairs of item records, A's then B's): per item, which run was
    right and its :func:`pair_record` (the question, both predictions, outcomes and answers), texts sharing the
    page's budget.

    ``a`` and ``b``: each run's id, label and links ({"report": href of its report.html, "items": href of its
    items file}).
    """
    pairs = [(A_ONLY, ra, rb) for ra, rb in a_only] + [(B_ONLY, ra, rb) for ra, rb in b_only]
    limit = text_limit(PAIR_TEXTS * len(pairs))
    return {
        "kind": "pairs",
        "section": section,
        "a": dict(a),
        "b": dict(b),
        "limit": limit,
        "columns": list(PAIR_COLUMNS),
        "rows": [[which, *pair_record(ra, rb, limit).values()] for which, ra, rb in pairs],
    }


def explorer(element_id: str, data: Mapping[str, Any], heading: str) -> str:
    """A placeholder the script fills (its heading stays if the script cannot run), and its data."""
    return (
        f'<div class="explorer" id="{_esc(element_id)}" data-source="{_esc(element_id)}-data" '
        f'data-kind="{_esc(data["kind"])}"><p>{_esc(heading)}</p><noscript>The item explorer needs JavaScript; '
        f"the items file holds every item.</noscript></div>{script_json(element_id + '-data', data)}"
    )


STYLE = """
.explorer{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:12px 0}
.explorer .controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:6px 0}
.explorer .controls label{font-size:.9em}.explorer input[type=search]{min-width:16em}
.explorer table{width:100%}.explorer tbody tr{cursor:pointer}.explorer tbody tr:hover td{background:#eef4ff}
.explorer tr.open td{background:#dbe9ff}.explorer th button{font:inherit;border:0;background:none;cursor:pointer;padding:0}
.explorer .preview{max-width:28em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;unicode-bidi:plaintext}
.explorer pre.text{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border:1px solid #eaeef2;padding:6px;
margin:2px 0;max-height:30em;overflow:auto;unicode-bidi:plaintext}
.explorer .shortened{color:#9a6700;font-style:italic;margin:2px 0}.explorer .detail{border-top:2px solid #d0d7de;
margin-top:8px;padding-top:6px}.explorer .side{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.explorer .outcome-correct{color:#116329}.explorer .outcome-wrong{color:#a40e26}.explorer .outcome-INVALID{color:#9a6700}
.explorer .role{font-weight:600;margin-top:4px}.explorer .pager button{margin:0 4px}
.explorer .template-system{outline:2px dotted #8250df;outline-offset:1px;background:#f5efff}
"""

# The explorer's script. It reads each .explorer's data (JSON.parse of a script block), renders one page of
# rows at a time, and inserts every text with textContent (never innerHTML): no text from a run becomes markup.
SCRIPT = r"""
(function () {
  "use strict";
  var PAGE = %(rows_per_page)d;
  var TEMPLATE_SYSTEM_TITLE = "added by the model's chat template, not the task";
  function el(tag, attributes, text) {
    var node = document.createElement(tag);
    if (attributes) { Object.keys(attributes).forEach(function (k) { node.setAttribute(k, attributes[k]); }); }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function plain(t) {
    if (t === null || t === undefined) { return ""; }
    if (typeof t === "string") { return t; }
    if (Array.isArray(t) && t.length === 3 && typeof t[2] === "number") { return t[0] + "\n" + t[1]; }
    if (Array.isArray(t)) { return t.map(function (m) { return m && m.content !== undefined ? m.role + ": " + plain(m.content) : plain(m); }).join("\n"); }
    return JSON.stringify(t);
  }
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
  function promptBlock(p, where, mark) {
    if (!Array.isArray(p) || (p.length === 3 && typeof p[2] === "number")) { return textBlock(p, where, "prompt", mark); }
    var box = el("div", {"class": "messages"});
    p.forEach(function (m) {
      box.appendChild(el("div", {"class": "role"}, m.role));
      box.appendChild(textBlock(m.content, where, "message", mark));
    });
    return box;
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
    return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
  }

  function Explorer(root) {
    var data = JSON.parse(document.getElementById(root.getAttribute("data-source")).textContent);
    var col = {}; data.columns.forEach(function (name, i) { col[name] = i; });
    var rows = data.rows, order = rows.map(function (_, i) { return i; });
    var shown = order.slice(), page = 0, sortKey = null, sortDir = 1, openIndex = null, haystack = null;
    var isItems = data.kind === "items";
    var templateSystem = typeof data.template_system === "string" ? data.template_system : null;
    var filterNames = isItems ? ["component", "gold", "pred", "outcome"] : ["which", "component", "gold"];
    var tableColumns = isItems
      ? [["#", null], ["task", "task"], ["doc id", "doc_id"], ["component", "component"], ["gold", "gold"], ["pred", "pred"],
         ["outcome", "outcome"], ["parse step", "parse_step"], ["reply / top choice", null]]
      : [["which", "which"], ["task", "task"], ["doc id (A / B)", "doc_id_a"], ["component", "component"], ["gold", "gold"],
         ["A: " + data.a.label, null], ["B: " + data.b.label, null]];
    root.textContent = "";
    var controls = el("div", {"class": "controls"}), selects = {};
    filterNames.forEach(function (name) {
      var label = el("label", null, name + " ");
      var select = el("select", {"class": "filter", "data-filter": name});
      var all = el("option", {"value": ""}, "all (" + rows.length + ")"); select.appendChild(all);
      var c = counts(rows.map(function (r) { return String(r[col[name]]); }));
      Object.keys(c).sort().forEach(function (v) { select.appendChild(el("option", {"value": v}, v + " (" + c[v] + ")")); });
      select.addEventListener("change", function () { apply(); });
      label.appendChild(select); controls.appendChild(label); selects[name] = select;
    });
    var search = el("input", {"type": "search", "class": "search", "placeholder": "search prompts and replies"});
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
    root.appendChild(controls); root.appendChild(summary); root.appendChild(pager);
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
        haystack = rows.map(function (r) {
          return isItems
            ? (r[col.task] + " " + r[col.doc_id] + "\n" + plain(r[col.prompt]) + "\n" + plain(r[col.reply]) + "\n" + plain(r[col.invalid_reason])).toLowerCase()
            : (r[col.task] + " " + r[col.doc_id_a] + "\n" + plain(r[col.answer_a]) + "\n" + plain(r[col.answer_b])).toLowerCase();
        });
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
    function render() {
      var pages = Math.max(1, Math.ceil(shown.length / PAGE));
      summary.textContent = "";
      summary.appendChild(el("span", {"class": "n-shown"}, String(shown.length)));
      summary.appendChild(document.createTextNode(" of " + rows.length + (isItems ? " items shown" : " discordant items shown")));
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
        if (isItems) {
          [i + 1, r[col.task], r[col.doc_id], r[col.component], r[col.gold], r[col.pred]].forEach(function (v) { tr.appendChild(el("td", null, v)); });
          tr.appendChild(el("td", {"class": "outcome-" + r[col.outcome]}, r[col.outcome]));
          tr.appendChild(el("td", null, r[col.parse_step] || (r[col.invalid_reason] ? "none" : "")));
          var choices = r[col.choices], preview;
          if (choices.length) {
            var best = choices.reduce(function (a, c) { return c[2] !== null && (a === null || c[2] > a[2]) ? c : a; }, null);
            preview = best === null ? "no probabilities" : plain(best[0]).slice(0, 120) + " (p=" + best[2].toFixed(3) + ")";
          } else { preview = plain(r[col.reply]).slice(0, 120); }
          tr.appendChild(el("td", {"class": "preview"}, preview));
        } else {
          [r[col.which], r[col.task], r[col.doc_id_a] + " / " + r[col.doc_id_b], r[col.component], r[col.gold]].forEach(function (v) { tr.appendChild(el("td", null, v)); });
          ["a", "b"].forEach(function (side) {
            var td = el("td");
            td.appendChild(el("div", {"class": "pred"}, "pred: " + r[col["pred_" + side]]));
            td.appendChild(textBlock(r[col["answer_" + side]], "the run's items file", "answer"));
            tr.appendChild(td);
          });
        }
        tr.addEventListener("click", function () { open(i); detail.scrollIntoView({block: "start"}); });
        body.appendChild(tr);
      });
    }
    function link(href, text) { var a = el("a", {"href": href}, text); return a; }
    function open(i) {
      openIndex = i; var r = rows[i];
      detail.textContent = ""; detail.hidden = false; detail.setAttribute("data-index", String(i));
      if (isItems) {
        detail.appendChild(el("h4", null, r[col.task] + ", doc " + r[col.doc_id] + " (" + data.file + " line " + (i + 1) + ")"));
        detail.appendChild(kvTable([["component", r[col.component]], ["gold", r[col.gold]], ["pred", r[col.pred]],
          ["outcome", r[col.outcome]], ["parse step", r[col.parse_step] || "none"], ["invalid reason", r[col.invalid_reason]],
          ["masked credentials in", r[col.redacted].length ? r[col.redacted].join(", ") : "nothing"]]));
        detail.appendChild(el("h5", null, "Prompt"));
        detail.appendChild(promptBlock(r[col.prompt], where(i), templateSystem));
        if (r[col.choices].length) {
          detail.appendChild(el("h5", null, "Choices (probability: softmax of the log-likelihoods)"));
          var t = el("table", {"class": "choices"}), tb = el("tbody"), hr = el("tr");
          ["choice", "log-likelihood", "probability"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
          tb.appendChild(hr);
          r[col.choices].forEach(function (c) {
            var tr = el("tr");
            var cell = el("td");  // whole: quoted, so that its spaces show; shortened: head and tail, marked
            if (typeof c[0] === "string") { cell.textContent = JSON.stringify(c[0]); } else { cell.appendChild(textBlock(c[0], where(i), "choice")); }
            tr.appendChild(cell);
            tr.appendChild(el("td", {"class": "num"}, c[1]));
            tr.appendChild(el("td", {"class": "num"}, c[2] === null ? "undefined" : c[2].toFixed(4)));
            tb.appendChild(tr);
          });
          t.appendChild(tb); detail.appendChild(t);
        } else {
          detail.appendChild(el("h5", null, "Reply"));
          var reply = textBlock(r[col.reply], where(i), "reply"); reply.classList.add("reply"); detail.appendChild(reply);
        }
        var extras = Object.keys(r[col.extras]).map(function (k) { return [k, r[col.extras][k]]; });
        var details = Object.keys(r[col.details]).map(function (k) { var v = r[col.details][k]; return [k, typeof v === "string" || (Array.isArray(v) && v.length === 3 && typeof v[2] === "number") ? textBlock(v, where(i), k) : v]; });
        if (extras.length) { detail.appendChild(el("h5", null, "Per-item rates")); detail.appendChild(kvTable(extras)); }
        if (details.length) { detail.appendChild(el("h5", null, "The benchmark's own fields")); detail.appendChild(kvTable(details)); }
        var p = el("p"); p.appendChild(link(data.file, "the items file")); p.appendChild(document.createTextNode(" holds this item whole (line " + (i + 1) + ")."));
        detail.appendChild(p);
      } else {
        detail.appendChild(el("h4", null, r[col.which] + ": " + r[col.task] + ", doc " + r[col.doc_id_a] + " / " + r[col.doc_id_b]));
        var side = el("div", {"class": "side"});
        ["a", "b"].forEach(function (s) {
          var box = el("div", {"class": "run-" + s});
          box.appendChild(el("h5", null, s.toUpperCase() + ": " + data[s].label + " (pred " + r[col["pred_" + s]] + ")"));
          box.appendChild(textBlock(r[col["answer_" + s]], "the run's items file", "answer"));
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
""" % {"rows_per_page": ROWS_PER_PAGE}


def script_tag() -> str:
    return f"<script>{SCRIPT}</script>"
