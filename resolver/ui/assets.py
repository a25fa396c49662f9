"""The viewer's stylesheet and decision colours, shipped as Python so every install carries them.

A non-editable install (the container image) only packages `.py` files unless package data is
configured; keeping the few lines of CSS here means `/ui` looks the same everywhere and nothing
is ever fetched from the network at run time (no CDN, no build step).
"""

from __future__ import annotations

# One colour per decision word of DESIGN §4, chosen to stay distinguishable side by side.
DECISION_COLOURS: dict[str, str] = {
    "shared": "#2e9d4b",
    "recorded": "#2f6fd6",
    "refetched": "#e08a1e",
    "stale": "#d62f2f",
    "write": "#8a3fc7",
    "replayed-write": "#b98ad9",
    "refused": "#6b1f1f",
    "passthrough": "#8c8c8c",
    "injected": "#c2185b",
    "simulated": "#00838f",
    "upstream-failed": "#e65100",
}
UNKNOWN_COLOUR = "#444444"


def decision_colour(decision: str) -> str:
    return DECISION_COLOURS.get(decision, UNKNOWN_COLOUR)


def decision_class(decision: str) -> str:
    """A CSS class for the decision (inline styles are barred by the pages' CSP)."""
    return f"d-{decision}" if decision in DECISION_COLOURS else "d-unknown"


def _decision_rules() -> str:
    rules = [f".d-{name} {{ background: {colour}; }}" for name, colour in DECISION_COLOURS.items()]
    rules.append(f".d-unknown {{ background: {UNKNOWN_COLOUR}; }}")
    return "\n".join(rules) + "\n"


STYLESHEET = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
       color: #1d1d1f; background: #fafafa; }
header { background: #23313f; color: #fff; padding: 10px 20px; display: flex; gap: 20px;
         align-items: baseline; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
header nav a { font-weight: 400; opacity: .85; margin-right: 12px; }
main { padding: 16px 20px 40px; max-width: 1400px; }
h1 { font-size: 20px; margin: 4px 0 12px; }
h2 { font-size: 16px; margin: 22px 0 8px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 12px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
                   font-size: 12.5px; }
pre { background: #fff; border: 1px solid #ddd; padding: 8px; overflow: auto; max-height: 600px;
      white-space: pre-wrap; word-break: break-all; margin: 4px 0 12px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; color: #fff;
         font-size: 12px; font-weight: 600; white-space: nowrap; }
.strip { display: flex; flex-wrap: wrap; gap: 2px; margin: 8px 0 14px; }
.strip a { display: block; width: 14px; height: 22px; border-radius: 2px; }
.legend span { margin-right: 10px; }
.muted { color: #6b6b6b; }
.note { background: #fff8e1; border: 1px solid #f0d98c; padding: 6px 10px; margin: 8px 0; }
.error { background: #fdecea; border: 1px solid #f3b8b1; padding: 8px 12px; }
ul.tree, ul.tree ul { list-style: none; padding-left: 18px; margin: 2px 0; }
ul.tree { padding-left: 0; }
ul.tree li { margin: 3px 0; }
table.diff { width: 100%; table-layout: fixed; }
table.diff td { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px;
                white-space: pre-wrap; word-break: break-all; border-color: #eee; }
table.diff .ln { width: 3.5em; color: #999; text-align: right; }
tr.changed td.text { background: #fff4d6; }
tr.diverged td { background: #fde2e1; font-weight: 600; }
tr.removed td.left { background: #fde2e1; }
tr.added td.right { background: #e1f6e4; }
tr.removed td.right, tr.added td.left { background: #f4f4f4; }
.columns { display: flex; gap: 16px; flex-wrap: wrap; }
.columns > section { flex: 1 1 420px; min-width: 0; }
form.login input { font: inherit; padding: 4px 6px; }
""" + _decision_rules()
