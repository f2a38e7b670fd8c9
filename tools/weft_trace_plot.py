#!/usr/bin/env python3
"""Draws a Weft trace as a Gantt chart: one band per rank, one thin row per event category.

It reads the per-rank files of WEFT_TRACE_FILE (merged in memory, as tools/weft_trace_merge.py
does) or a file that tool wrote, and saves a PNG with no display needed: a picture to put in a bug
report, or to see at a glance which rank waits on which while the others work.

  python3 tools/weft_trace_plot.py -o trace.png [--title T] [--cats op,step,wait,net]
                                   [--start-us A --end-us B] FILE_OR_DIR...

--cats picks the rows and their order (api and group are left out unless named; "all" is every
category in the trace). --start-us/--end-us cut a window, in microseconds from the trace's start.
Bars are colored by category, step bars by a shade per step name. Exit status 2: no matplotlib
(Debian: apt install python3-matplotlib), a file that cannot be read, or no event in the window.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import weft_trace_merge as wtm  # noqa: E402  (lives next to this file, not on the path)

DEFAULT_CATS = "op,step,wait,net"
ORDER = ("api", "group", "op", "step", "wait", "net")  # the rows' order for --cats all: outer first
COLORS = {"api": "#9e9e9e", "group": "#c8a165", "op": "#1f77b4", "wait": "#d62728", "net": "#9467bd"}
# Categories Weft may add later still get a color of their own.
SPARE_COLORS = ("#17becf", "#bcbd22", "#e377c2", "#8c564b", "#ff7f0e", "#7f7f7f")
BAND_GAP = 0.7  # empty space between two ranks' bands, in rows
MAX_STEP_LEGEND = 8  # more step names than this share one legend entry


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display), or None when not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def select(events, cats, start, end):
    """[(rank, cat, name, t0, t1)] of the timed events in cats, clipped to [start, end] (us)."""
    out = []
    for ev in events:
        if ev.get("ph") == "M" or "ts" not in ev:
            continue
        cat = ev.get("cat", "")
        if cats is not None and cat not in cats:
            continue
        t0 = ev["ts"]
        t1 = t0 + ev.get("dur", 0)
        if (start is not None and t1 < start) or (end is not None and t0 > end):
            continue
        if start is not None:
            t0 = max(t0, start)
        if end is not None:
            t1 = min(t1, end)
        out.append((ev.get("pid", 0), cat, ev.get("name", ""), t0, t1))
    return out


def colors_for(cats, step_names, plt):
    """{cat: color} for the rows, and {step name: shade} so that a step's kind shows in its bar."""
    cat_color, spare = {}, iter(SPARE_COLORS * (len(cats) // len(SPARE_COLORS) + 1))
    for c in cats:
        cat_color[c] = COLORS.get(c) or ("#2ca02c" if c == "step" else next(spare))
    greens = plt.get_cmap("Greens")
    n = len(step_names)
    shades = {name: greens(0.4 + 0.5 * i / max(1, n - 1)) for i, name in enumerate(step_names)}
    return cat_color, shades


def draw(merged, out, cats_arg, start, end, title, plt):
    """Saves the chart of merged to out; returns an error message, or None."""
    wanted = None if cats_arg == "all" else [c for c in cats_arg.split(",") if c]
    sel = select(merged["traceEvents"], None if wanted is None else set(wanted), start, end)
    if not sel:
        return "no events of categories " + (cats_arg or "-") + " in the time range"
    present = {s[1] for s in sel}
    # Every band has the same rows, so a category lines up across ranks; one with no event is left out.
    order = wanted or sorted(present, key=lambda c: (ORDER.index(c) if c in ORDER else len(ORDER), c))
    cats = [c for c in order if c in present]
    ranks = sorted({s[0] for s in sel} | {r["rank"] for r in merged["weft"].get("ranks", [])},
                   key=wtm.rank_key)
    row = {}
    y = 0.0
    band_mid = {}
    for r in ranks:
        for c in cats:
            row[(r, c)] = y
            y += 1
        band_mid[r] = y - (len(cats) + 1) / 2
        y += BAND_GAP
    step_names = sorted({s[2] for s in sel if s[1] == "step"})
    cat_color, shades = colors_for(cats, step_names, plt)

    # Without --start-us the chart begins with the first drawn event: the calls that set a job up
    # (ncclCommInitRank) are not drawn by default and would leave the left of the chart empty.
    x0 = (start if start is not None else min(s[3] for s in sel)) / 1000
    x1 = (end if end is not None else max(s[4] for s in sel)) / 1000
    if x1 <= x0:
        x1 = x0 + 0.001
    # A bar narrower than about a pixel would vanish: a 1 us wait in a 1 s trace must still show.
    min_w = (x1 - x0) / 2000
    bars = {}  # (row y, color) -> [(x, width)]: one broken_barh call each, not one per event
    for r, c, name, t0, t1 in sel:
        color = shades[name] if c == "step" else cat_color[c]
        bars.setdefault((row[(r, c)], color), []).append((t0 / 1000, max((t1 - t0) / 1000, min_w)))

    height = min(1.2 * len(ranks) + 1, 150)  # Agg refuses images over 2^16 pixels a side
    fig, ax = plt.subplots(figsize=(12, height), dpi=120)
    for (ry, color), spans in bars.items():
        ax.broken_barh(spans, (ry - 0.4, 0.8), facecolors=color, linewidth=0)
    ax.set_ylim(y - BAND_GAP - 0.2, -0.8)  # inverted: rank 0 at the top
    ax.set_yticks([row[k] for k in row])
    ax.set_yticklabels([k[1] for k in row], fontsize=7)
    label_at = ax.get_yaxis_transform()  # x in axes fractions, y in rows
    for i, r in enumerate(ranks):
        ax.text(-0.05, band_mid[r], f"rank {r}", transform=label_at, ha="right", va="center",
                fontsize=9, fontweight="bold")
        if i:
            ax.axhline(row[(r, cats[0])] - (1 + BAND_GAP) / 2, color="0.8", linewidth=0.8)
    ax.set_xlim(x0, x1)
    unc = max((e.get("clockUncertaintyUs", 0.0) for e in merged["weft"].get("ranks", [])), default=0.0)
    ax.set_xlabel(f"time since the trace's start (ms); ranks' clocks aligned to within {unc:.1f} us")
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(title or f"Weft trace: {len(ranks)} rank(s), {x1 - x0:.3f} ms")

    handles = []
    for c in cats:
        if c == "step" and 0 < len(step_names) <= MAX_STEP_LEGEND:
            handles += [plt.Rectangle((0, 0), 1, 1, color=shades[n], label=f"step {n}") for n in step_names]
        elif c == "step":
            handles.append(plt.Rectangle((0, 0), 1, 1, color=cat_color[c], label="step"))
        else:
            handles.append(plt.Rectangle((0, 0), 1, 1, color=cat_color[c], label=c))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=8, frameon=False)
    # "tight" takes in the rank labels and the legend, which lie outside the axes.
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    ap.add_argument("--title", help="the chart's title (default: ranks and time span)")
    ap.add_argument("--cats", default=DEFAULT_CATS,
                    help=f"comma-separated categories, one row each, or all (default {DEFAULT_CATS})")
    ap.add_argument("--start-us", type=float, help="window start, us from the trace's start")
    ap.add_argument("--end-us", type=float, help="window end, us from the trace's start")
    ap.add_argument("files", nargs="+", help="per-rank trace files, directories of them, or a merged file")
    args = ap.parse_args(argv)
    if args.start_us is not None and args.end_us is not None and args.end_us <= args.start_us:
        print("weft_trace_plot: error: --end-us must be after --start-us", file=sys.stderr)
        return 2
    plt = pyplot()
    if plt is None:
        print("weft_trace_plot: error: matplotlib is not installed "
              "(Debian: apt install python3-matplotlib)", file=sys.stderr)
        return 2
    paths = wtm.expand(args.files)
    if not paths:
        print("weft_trace_plot: error: no trace files in " + " ".join(args.files), file=sys.stderr)
        return 2
    try:
        # A merged file goes through merge() unchanged: its events carry its origin back.
        merged = wtm.merge(paths, warn=lambda m: print(f"weft_trace_plot: warning: {m}", file=sys.stderr))
    except wtm.TraceError as e:
        print(f"weft_trace_plot: error: {e}", file=sys.stderr)
        return 2
    err = draw(merged, args.output, args.cats, args.start_us, args.end_us, args.title, plt)
    if err:
        print(f"weft_trace_plot: error: {err}", file=sys.stderr)
        return 2
    print(f"weft_trace_plot: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
