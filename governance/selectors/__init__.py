"""Reads for the dashboard pages: runs, a run's governance and trace, violations, the audit log, overview.

Each selector runs a fixed number of queries, whatever the number of rows.
"""

from ..accumulated import run_accumulated, run_totals
from .evidence import citation_parts, evaluation_evidence
from .governance_tab import run_governance, run_shadow_violations
from .lists import QUEUE_NOT_FILTERS, audit_list, next_pending, violation_counts, violation_list
from .overview import DEFAULT_PERIOD, EVALUATION_SERIES, PERIODS, RUN_SERIES, overview_stats
from .retrieval import Retrieval
from .run_list import SORTS, parse_sort, run_list
from .trace import run_trace
from .violations import violation_evidence

__all__ = [
    "DEFAULT_PERIOD",
    "EVALUATION_SERIES",
    "PERIODS",
    "RUN_SERIES",
    "SORTS",
    "Retrieval",
    "audit_list",
    "citation_parts",
    "evaluation_evidence",
    "overview_stats",
    "parse_sort",
    "run_accumulated",
    "run_governance",
    "run_list",
    "run_shadow_violations",
    "run_totals",
    "run_trace",
    "violation_evidence",
    "violation_list",
    "violation_counts",
    "next_pending",
    "QUEUE_NOT_FILTERS",
]
