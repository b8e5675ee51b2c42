"""Faults that tests inject into what the code writes."""

import errno
import os


def full_disk(monkeypatch, error=errno.ENOSPC):
    """Every file opened for writing through ``os.fdopen`` fails its writes with ``error`` (a full disk)."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def write(self, content):
            raise OSError(error, os.strerror(error))

    def fdopen(fd, mode="r", *args, **kwargs):
        stream = real_fdopen(fd, mode, *args, **kwargs)
        return Full(stream) if "w" in mode else stream

    monkeypatch.setattr(os, "fdopen", fdopen)
