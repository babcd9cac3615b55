"""berth's web UI: the same pages live (``/ui/`` of ``berth run`` and ``berth serve``) and offline
(``berth simulate --html``, ``berth capacity --html``: one self-contained file).

- :mod:`.assets` reads the page, script and stylesheet shipped in the package (no CDN).
- :mod:`.live` installs ``/ui/`` and its JSON API on a component's FastAPI app; the data comes from a
  :class:`~app.ui.live.UiSource` (``berth run``: the decision traces behind ``/debug/pods`` and the
  engine's cache; ``berth serve``: the cache).
- :mod:`.report` renders a ``-o json`` document into the offline report.

The UI sits above :mod:`app.simulate` (it reuses the simulate JSON shape) and below
:mod:`app.server` and the faces, which install it.
"""
