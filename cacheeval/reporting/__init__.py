"""Reporting: one :class:`~.report.Report` per run and its renderers.

:mod:`.report` builds the report and serialises it; :mod:`.report_markdown`
renders Markdown; :mod:`.compare` sets several reports side by side;
:mod:`.plotdata` and :mod:`.plot` draw figures. Reads :mod:`cacheeval.results`
and :mod:`cacheeval.metrics`; never runs a cache.
"""

# The Markdown renderer registers itself with the report model on import, so
# Report.to_markdown() works however the package is first reached.
from . import report_markdown as report_markdown
