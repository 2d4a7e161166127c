"""One module per log format, each exposing ``READER`` (or ``READERS`` for a file and a folder form): how the
format is recognised and streamed (:class:`rlvitals.ingest.Reader`). The registry, in sniffing order, is
``rlvitals.ingest.READER_MODULES``; the machinery the readers share (text, cursors, crash scanning, files) stays in
:mod:`rlvitals.ingest`."""
