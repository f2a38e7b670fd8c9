#!/usr/bin/env python3
"""Unit tests of tools/weft_trace_merge.py and tools/weft_trace_plot.py on synthetic rank files.

The files are written here in the format WEFT_TRACE_FILE gives; the times are sums of powers of
two, so the expected shifted times are exact and compared with ==. The plot test is skipped where
matplotlib is missing.

  python3 tests/tools/test_trace_tools.py [-v]
"""
import contextlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
import weft_trace_merge as wtm  # noqa: E402
import weft_trace_plot as wtp  # noqa: E402

HAVE_MPL = wtp.pyplot() is not None


def ev(pid, cat, name, ts, dur, **args):
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": 1, "args": args}


def meta(pid, host="hostA"):
    return [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"rank {pid} ({host})"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "main"}}]


def rank_entry(rank, offset, unc=0.0, nranks=4):
    return {"rank": rank, "nranks": nranks, "clockOffsetUs": offset, "clockUncertaintyUs": unc}


class TraceToolsTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name
        self.warnings = []

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, events, ranks=None, raw=None, pid=1234, dropped=0):
        """A trace file in the temp dir: raw text as given, else the events and "weft" key."""
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            if raw is not None:
                f.write(raw)
            else:
                doc = {"traceEvents": events, "displayTimeUnit": "ns"}
                if ranks is not None:
                    doc["weft"] = {"version": "2.28.9", "host": "hostA", "pid": pid,
                                   "clock": "CLOCK_MONOTONIC", "ranks": ranks, "droppedEvents": dropped}
                json.dump(doc, f)
        return path

    def merge(self, *paths):
        return wtm.merge(list(paths), warn=self.warnings.append)

    def run_main(self, module, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = module.main(argv)
        return rc, err.getvalue()

    def timed(self, merged, pid=None):
        return [e for e in merged["traceEvents"] if "ts" in e and (pid is None or e["pid"] == pid)]

    def two_ranks(self):
        """Rank 0 on the reference clock; rank 1's clock is 250.5 us behind it."""
        a = self.write("r0.json", meta(0) + [ev(0, "op", "AllReduce", 2000.0, 30.25, seq=1),
                                             ev(0, "wait", "wait", 2010.5, 4.0, peer=1)],
                       [rank_entry(0, 0.0)])
        b = self.write("r1.json", meta(1) + [ev(1, "op", "AllReduce", 1700.25, 50.0, seq=1),
                                             ev(1, "step", "RecvReduceSend", 1720.125, 8.5, step=1)],
                       [rank_entry(1, 250.5, 1.5)])
        return a, b

    def test_offsets_applied_and_origin_subtracted(self):
        merged = self.merge(*self.two_ranks())
        origin = 1700.25 + 250.5  # rank 1's first event, on rank 0's clock, is the earliest
        self.assertEqual(merged["weft"]["originUs"], origin)
        got = [(e["pid"], e["name"], e["ts"], e["dur"]) for e in self.timed(merged)]
        self.assertEqual(got, [(0, "AllReduce", 2000.0 - origin, 30.25),
                               (0, "wait", 2010.5 - origin, 4.0),
                               (1, "AllReduce", 0.0, 50.0),
                               (1, "RecvReduceSend", 1720.125 + 250.5 - origin, 8.5)])
        self.assertEqual(merged["displayTimeUnit"], "ns")
        self.assertEqual(self.warnings, [])

    def test_every_rank_is_a_named_process(self):
        a, b = self.two_ranks()
        # Rank 2's file has no metadata events: the merge names its process all the same.
        c = self.write("r2.json", [ev(2, "net", "net send", 5000.0, 1.0, peer=0, bytes=65536)],
                       [rank_entry(2, -10.0)])
        merged = self.merge(a, b, c)
        names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"]
                 if e.get("ph") == "M" and e["name"] == "process_name"}
        self.assertEqual(names, {0: "rank 0 (hostA)", 1: "rank 1 (hostA)", 2: "rank 2"})
        self.assertEqual([r["rank"] for r in merged["weft"]["ranks"]], [0, 1, 2])
        self.assertEqual(merged["weft"]["sources"], [a, b, c])
        # Sorted by rank, each rank's metadata first, then its events by time.
        keys = [(e["pid"], "ts" in e, e.get("ts", 0)) for e in merged["traceEvents"]]
        self.assertEqual(keys, sorted(keys))

    def test_conflicting_offsets_fail_naming_the_file(self):
        a = self.write("a.json", [ev(1, "op", "AllReduce", 10.0, 1.0)], [rank_entry(1, 5.0)])
        b = self.write("b.json", [ev(1, "op", "AllReduce", 20.0, 1.0)], [rank_entry(1, 7.5)])
        rc, err = self.run_main(wtm, ["-o", os.path.join(self.dir, "out.json"), a, b])
        self.assertEqual(rc, 2)
        self.assertIn(b, err)
        self.assertIn("rank 1", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out.json")))

    def test_same_rank_twice_with_same_content_is_merged(self):
        entry = rank_entry(3, 12.25, 0.5)
        a = self.write("a.json", [ev(3, "op", "Broadcast", 100.0, 2.0)], [entry])
        b = self.write("b.json", [ev(3, "wait", "wait", 101.0, 0.5)], [dict(entry)])
        merged = self.merge(a, b)
        self.assertEqual(merged["weft"]["ranks"], [entry])
        self.assertEqual([e["ts"] for e in self.timed(merged)], [0.0, 1.0])

    def test_dropped_events_counted_once_per_process(self):
        # One process writes one file per rank (%r), each with the process's count.
        a = self.write("a.json", [ev(0, "op", "AllReduce", 1.0, 1.0)], [rank_entry(0, 0.0)], dropped=5)
        b = self.write("b.json", [ev(1, "op", "AllReduce", 1.0, 1.0)], [rank_entry(1, 0.0)], dropped=5)
        c = self.write("c.json", [ev(2, "op", "AllReduce", 1.0, 1.0)], [rank_entry(2, 0.0)], pid=99, dropped=2)
        self.assertEqual(self.merge(a, b, c)["weft"]["droppedEvents"], 7)

    def test_invalid_json_fails_naming_the_file(self):
        good = self.write("good.json", [ev(0, "op", "AllReduce", 1.0, 1.0)], [rank_entry(0, 0.0)])
        bad = self.write("bad.json", None, raw='{"traceEvents": [')
        rc, err = self.run_main(wtm, ["-o", os.path.join(self.dir, "out.json"), good, bad])
        self.assertEqual(rc, 2)
        self.assertIn(bad, err)
        self.assertIn("not valid JSON", err)
        # Valid JSON that is not a trace fails the same way.
        other = self.write("other.json", None, raw='{"events": []}')
        rc, err = self.run_main(wtm, ["-o", os.path.join(self.dir, "out.json"), other])
        self.assertEqual(rc, 2)
        self.assertIn(other, err)
        self.assertIn("traceEvents", err)

    def test_multi_rank_file_uses_each_ranks_offset(self):
        path = self.write("proc.json", meta(2) + meta(3) + [ev(2, "op", "AllGather", 400.0, 3.0),
                                                            ev(3, "op", "AllGather", 400.0, 3.0),
                                                            ev(3, "net", "net recv", 420.5, 1.0)],
                          [rank_entry(2, 10.0), rank_entry(3, -5.5)])
        merged = self.merge(path)
        origin = 400.0 - 5.5
        self.assertEqual(merged["weft"]["originUs"], origin)
        self.assertEqual([e["ts"] for e in self.timed(merged, 2)], [400.0 + 10.0 - origin])
        self.assertEqual([e["ts"] for e in self.timed(merged, 3)], [0.0, 420.5 - 5.5 - origin])

    def test_missing_weft_key_and_unlisted_rank_count_as_offset_zero(self):
        a = self.write("a.json", [ev(0, "op", "AllReduce", 50.0, 1.0)])
        b = self.write("b.json", [ev(1, "op", "AllReduce", 40.0, 1.0), ev(2, "op", "AllReduce", 30.0, 1.0)],
                       [rank_entry(1, 100.0)])
        merged = self.merge(a, b)
        got = {e["pid"]: e["ts"] for e in self.timed(merged)}
        self.assertEqual(got, {0: 20.0, 1: 110.0, 2: 0.0})
        self.assertEqual(len(self.warnings), 2)
        self.assertIn(a, self.warnings[0])
        self.assertIn(b, self.warnings[1])

    def test_main_writes_a_file_that_merges_again_unchanged(self):
        a, b = self.two_ranks()
        out = os.path.join(self.dir, "merged.json")
        rc, err = self.run_main(wtm, ["-o", out, self.dir])  # the directory stands for its files
        self.assertEqual(rc, 0, err)
        self.assertIn("2 rank(s), 4 events", err)
        self.assertIn("up to 1.500 us", err)
        with open(out, encoding="utf-8") as f:
            first = json.load(f)
        self.assertEqual(first["weft"]["sources"], [a, b])
        again = self.merge(out)
        self.assertEqual(self.timed(again), self.timed(first))
        self.assertEqual(again["weft"]["originUs"], first["weft"]["originUs"])

    def test_command_line_exit_status(self):
        bad = self.write("bad.json", None, raw="not json")
        proc = subprocess.run([sys.executable, os.path.join(TOOLS, "weft_trace_merge.py"),
                               "-o", os.path.join(self.dir, "out.json"), bad],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(bad, proc.stderr)

    @unittest.skipUnless(HAVE_MPL, "matplotlib is not installed")
    def test_plot_writes_a_png(self):
        a, b = self.two_ranks()
        heights = {}
        for nranks in (2, 4):
            files = [a, b]
            for r in range(2, nranks):
                files.append(self.write(f"r{r}.json", [ev(r, "op", "AllReduce", 1900.0 + r, 60.0),
                                                       ev(r, "wait", "wait", 1910.0, 5.0)],
                                        [rank_entry(r, 1.0)]))
            png = os.path.join(self.dir, f"trace{nranks}.png")
            rc, err = self.run_main(wtp, ["-o", png, "--title", "test", "--cats", "op,step,wait,net"] + files)
            self.assertEqual(rc, 0, err)
            with open(png, "rb") as f:
                head = f.read(24)
            self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
            self.assertEqual(head[12:16], b"IHDR")
            width, height = struct.unpack(">II", head[16:24])
            self.assertTrue(1000 < width < 2500, width)  # 12 in at 120 dpi, plus labels and legend
            self.assertTrue(200 < height < 1200, height)
            heights[nranks] = height
        self.assertGreater(heights[4], heights[2] + 150)  # each rank adds a band
        # A merged file plots too; a window with no event in it is an error.
        merged = os.path.join(self.dir, "merged.json")
        self.assertEqual(self.run_main(wtm, ["-o", merged, a, b])[0], 0)
        rc, err = self.run_main(wtp, ["-o", os.path.join(self.dir, "m.png"), merged])
        self.assertEqual(rc, 0, err)
        rc, err = self.run_main(wtp, ["-o", os.path.join(self.dir, "none.png"), "--start-us", "1e6",
                                      "--end-us", "2e6", merged])
        self.assertEqual(rc, 2)
        self.assertIn("no events", err)


if __name__ == "__main__":
    unittest.main()
