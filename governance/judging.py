"""Where judges plug into the run services. Until judges are configured this adds nothing.

judge_inline: judges a policy blocks on at mid_execution run synchronously within a time budget.
queue_background: judges whose result only adds a warning or is for review run in Celery on commit.
"""


def judge_inline(*, tenant, run, phase, specs, state, report, decision):
    return decision


def queue_background(*, tenant, run, phase, specs, decision_row, report) -> None:
    return None
