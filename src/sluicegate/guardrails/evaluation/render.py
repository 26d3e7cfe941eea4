"""An `EvalReport` as a terminal table, JSON, or a self-contained HTML page (inline CSS, an
inline SVG chart of leak rate per label and the JSON report as a data block: nothing is
fetched or executed, it opens offline)."""

from __future__ import annotations

import html
import json
from typing import Literal

from sluicegate.guardrails.evaluation.scores import EvalReport, KindScore

Format = Literal["table", "json", "html"]
FORMATS: tuple[Format, ...] = ("table", "json", "html")

_COLUMNS = ("label", "gold", "recall", "predicted", "precision", "F1", "leak rate", "over-redacted")


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(score: KindScore) -> list[str]:
    leak = "-" if score.leak_rate is None else f"{score.leak_rate:.3f} ({score.leaked}/{score.leak_checked})"
    return [
        score.label,
        str(score.gold),
        _num(score.recall),
        str(score.predicted),
        _num(score.precision),
        _num(score.f1),
        leak,
        str(score.over_redacted_chars),
    ]


def _rows(report: EvalReport) -> list[list[str]]:
    rows = [_row(s) for _, s in sorted(report.kinds.items())]
    if report.kinds:
        rows.append(_row(report.totals()))
    return rows


def _summary(report: EvalReport) -> list[str]:
    data = report.to_dict()
    latency = data["latency_ms"]
    lines = [
        f"{report.examples} texts, phase {report.phase}, {report.blocked} blocked",
        f"over-redaction: {report.over_redacted_chars} of {report.non_pii_chars} non-PII characters "
        f"({_num(report.over_redaction_rate, 4)})",
        f"latency per text: p50 {_num(latency['p50'])} ms, p99 {_num(latency['p99'])} ms",
        f"detector calls: {report.detector_calls}, "
        f"tokens in/out {report.input_tokens}/{report.output_tokens}, cost ${report.cost:.4f}"
        + (f" (unpriced: {', '.join(report.unpriced_models)})" if report.unpriced_models else ""),
    ]
    verdicts = report.verdicts
    if verdicts is not None:
        lines.append(
            f"verdicts: accuracy {_num(verdicts.accuracy)} over {verdicts.total}; "
            f"block→blocked {verdicts.true_block}, block→passed {verdicts.false_pass}, "
            f"pass→blocked {verdicts.false_block}, pass→passed {verdicts.true_pass}"
        )
    return lines


def render_table(report: EvalReport) -> str:
    rows = _rows(report)
    out: list[str] = []
    if rows:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]

        def line(cells: list[str] | tuple[str, ...]) -> str:
            return "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )

        out += [line(_COLUMNS), "  ".join("-" * w for w in widths), *(line(r) for r in rows), ""]
    out += _summary(report)
    return "\n".join(out) + "\n"


def _chart(report: EvalReport) -> str:
    """Horizontal bars, one per label with checked values: the leak rate, 0 to 100 %."""
    bars = [(s.label, s.leak_rate) for _, s in sorted(report.kinds.items()) if s.leak_rate is not None]
    if not bars:
        return "<p>No gold value of 6 or more characters: no leak rate to chart.</p>"
    left, width, row = 170, 360, 24
    height = row * len(bars) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{left + width + 70}" '
        f'height="{height}" aria-label="Leak rate per label">'
    ]
    for i, (label, rate) in enumerate(bars):
        y = 10 + i * row
        bar = max(1.0, rate * width)
        colour = "#2e7d32" if rate <= 0.02 else "#f9a825" if rate <= 0.2 else "#c62828"
        parts.append(
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{html.escape(label)}</text>'
            f'<rect x="{left}" y="{y + 2}" width="{bar:.1f}" height="{row - 6}" fill="{colour}"/>'
            f'<text x="{left + bar + 6:.1f}" y="{y + 15}">{rate * 100:.1f} %</text>'
        )
    axis = 10 + len(bars) * row
    parts.append(f'<line x1="{left}" y1="{axis}" x2="{left + width}" y2="{axis}" stroke="#888"/>')
    parts.append(f'<text x="{left}" y="{axis + 16}">0 %</text>')
    parts.append(f'<text x="{left + width}" y="{axis + 16}" text-anchor="end">100 %</text></svg>')
    return "".join(parts)


_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
    "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}"
    "td:first-child,th:first-child{text-align:left}tr:last-child td{font-weight:600}"
    "svg text{font:12px system-ui,sans-serif}"
)


def render_html(report: EvalReport, title: str = "sluicegate eval") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in _rows(report)
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" if body else ""
    summary = "".join(f"<li>{html.escape(line)}</li>" for line in _summary(report))
    data = json.dumps(report.to_dict()).replace("</", "<\\/")  # raw text inside <script>
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<h2>Leak rate per label</h2>{_chart(report)}<h2>Scores</h2>{table}<ul>{summary}</ul>"
        f'<script type="application/json" id="report">{data}</script></body></html>\n'
    )


def render(report: EvalReport, fmt: Format = "table", *, title: str = "sluicegate eval") -> str:
    if fmt == "table":
        return render_table(report)
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2) + "\n"
    if fmt == "html":
        return render_html(report, title)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
