"""HTML: one self-contained page for a report or a comparison, and the static site of sweeps, bundles or the library;
Jinja2 templates in tfcnnwrap/templates."""
