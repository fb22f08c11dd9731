"""Plans out of JSON: CSV tables, a Gantt chart, a utilization chart, and a one-file HTML report.

matplotlib is imported only when a chart is drawn.
"""

from horizon_opt.export._common import ensure_plan_fits, plan_problems
from horizon_opt.export.charts import (
    MAX_NODE_ROWS,
    plot_gantt,
    plot_utilization,
    render,
    save_figure,
    write_chart,
)
from horizon_opt.export.csv import inference_path, read_csv, read_inference_csv, write_csv
from horizon_opt.export.report import file_labels, report_html, write_report

__all__ = [
    "MAX_NODE_ROWS",
    "ensure_plan_fits",
    "file_labels",
    "inference_path",
    "plan_problems",
    "plot_gantt",
    "plot_utilization",
    "read_csv",
    "read_inference_csv",
    "render",
    "report_html",
    "save_figure",
    "write_chart",
    "write_csv",
    "write_report",
]
