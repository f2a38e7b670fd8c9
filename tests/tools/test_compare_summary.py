#!/usr/bin/env python3
"""Unit tests of benchmarks/compare_summary.py, guard_summary.py and plot_compare.py on synthetic raw
outputs: Weft's perf tool lines, the Open MPI programs' and MPICH's, two repetitions each. The times
are chosen so that medians, the better MPI, the ratios and busbw are known exactly. The plot's test
skips itself where matplotlib is missing (Debian: apt install python3-matplotlib).

  python3 tests/tools/test_compare_summary.py [-v]
"""
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks")


def weft_line(size, oop_us, ip_us):
    # size count type redop root time algbw busbw #wrong time algbw busbw #wrong
    ip = ("%.2f" % ip_us) if ip_us is not None else "N/A"
    return "%12d %12d float sum -1 %10.2f 0 0 0 %s 0 0 %s" % (size, size // 4, oop_us, ip,
                                                            "0" if ip_us is not None else "N/A")


def mpi_line(op, n, size, t_us):
    return "%-14s %-6d %12d %10d %12.2f %10.4f %10.4f %8s" % (op, n, size, 100, t_us, 0, 0, "ok")


class CompareSummary(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        os.makedirs(os.path.join(self.dir, "raw"))

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, lines):
        with open(os.path.join(self.dir, "raw", name), "w") as f:
            f.write("\n".join(lines) + "\n")

    def summary(self):
        return subprocess.run([sys.executable, os.path.join(BENCH, "compare_summary.py"), self.dir],
                              check=True, capture_output=True, text=True).stdout

    def guard(self, part, text):
        """guard_summary.py's table, with `text` as the summary of its run `part` (compare, scale)."""
        guard = os.path.join(self.dir, "guard")
        os.makedirs(os.path.join(guard, part))
        with open(os.path.join(guard, part, "summary.md"), "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, os.path.join(BENCH, "guard_summary.py"), guard], check=True,
                              capture_output=True, text=True).stdout

    def row(self, text, section, size):
        lines = text.splitlines()
        at = lines.index(next(line for line in lines if line.startswith(section)))
        for line in lines[at + 1:]:
            if line.startswith("## "):
                break
            if line.startswith("| %s |" % size):
                return [c.strip() for c in line.strip().strip("|").split("|")]
        self.fail("no row %s in %s" % (size, section))

    def test_better_mpi_and_in_place(self):
        # ReduceScatter, 2 ranks, 1 MiB: Weft 100/120 us (median of 90, 110 / 120, 120), Open MPI
        # 400 us, MPICH 200 us: the ratio is against MPICH (2.00x), oop/ip 100/120 = 0.83.
        for rep, (w, m, c) in enumerate(((90, 390, 190), (110, 410, 210)), 1):
            self.write("weft_reducescatter_n2.rep%d.txt" % rep, [weft_line(1 << 20, w, 120)])
            self.write("mpi_ref_n2.rep%d.txt" % rep, [mpi_line("reducescatter", 2, 1 << 20, m)])
            self.write("mpich_shm_n2.rep%d.txt" % rep, [mpi_line("reducescatter", 2, 1 << 20, c)])
        text = self.summary()
        cells = self.row(text, "## reducescatter, 2 ranks", "1 MiB")
        self.assertEqual(cells[5], "2.00x")
        self.assertEqual(cells[6], "0.83")
        # busbw = size / t * (n-1)/n: 1 MiB in 100 us is 10.49 GB/s algbw, 5.24 busbw.
        self.assertEqual(cells[1], "100.0 us / 5.24")
        self.assertEqual(cells[4], "200.0 us / 2.62")
        self.assertIn("and MPICH", text.splitlines()[0])

    def test_alltoall_without_in_place_and_open_mpi_only(self):
        # Weft has no in-place AlltoAll (N/A); without MPICH the ratio is against Open MPI.
        self.write("weft_alltoall_n4.rep1.txt", [weft_line(65536, 50, None)])
        self.write("mpi_ref_n4.rep1.txt", [mpi_line("alltoall", 4, 65536, 75)])
        cells = self.row(self.summary(), "## alltoall, 4 ranks", "64 KiB")
        self.assertEqual(cells[2], "")
        self.assertEqual(cells[4], "")
        self.assertEqual(cells[5], "1.50x")

    def test_guard_takes_the_better_mpi(self):
        for rep in (1, 2):
            self.write("weft_allreduce_n2.rep%d.txt" % rep, [weft_line(8, 0.5, 0.5)])
            self.write("mpi_shm_n2.rep%d.txt" % rep, [mpi_line("allreduce", 2, 8, 1.0)])
            self.write("mpich_shm_n2.rep%d.txt" % rep, [mpi_line("allreduce", 2, 8, 0.75)])
        out = self.guard("compare", self.summary())
        row = next(line for line in out.splitlines() if line.startswith("| shm allreduce 2 ranks 8 B |"))
        self.assertIn("MPICH 0.75 us", row)
        self.assertIn("1.50x", row)

    def test_any_rank_count_and_the_oversubscribed_guard_rows(self):
        # 16 ranks (more than any machine here has cores): the key table and the section exist, and
        # the guard reads the scale run against Open MPI with goal 1.0 (40 / 20 us = 2.00x), and
        # does not hold it to the 2-rank bounds.
        self.write("weft_allreduce_n16.rep1.txt", [weft_line(8, 20, 21)])
        self.write("mpi_shm_n16.rep1.txt", [mpi_line("allreduce", 16, 8, 40)])
        text = self.summary()
        self.assertIn("| 16 | ratio (better MPI's time / Weft time) | 2.00x |", text)
        self.assertEqual(self.row(text, "## allreduce, 16 ranks", "8 B")[5], "2.00x")
        out = self.guard("scale", text)
        rows = [line for line in out.splitlines() if line.startswith("| oversubscribed, shm allreduce 16 ranks")]
        self.assertEqual(len(rows), 1, out)
        self.assertIn("| Open MPI 40.00 us | 2.00x | 1.00x | yes |", rows[0])
        self.assertNotIn("vs 0.30 us", out)

    def test_sum_pass_bounds_the_out_of_place_row(self):
        # 2 ranks, 64 MiB: Weft 10 ms out of place, 8 ms in place (0.80); reduce_passes measured
        # out of place at 0.60 and 0.70 of in place (median 0.65): the guard's row is 0.80 / 0.65.
        for rep, ratio in ((1, 0.6), (2, 0.7)):
            self.write("weft_allreduce_n2.rep%d.txt" % rep, [weft_line(64 << 20, 10000, 8000)])
            self.write("mpi_shm_n2.rep%d.txt" % rep, [mpi_line("allreduce", 2, 64 << 20, 20000)])
            self.write("passes.rep%d.txt" % rep, ["# reduce_passes: float32 sum", "in-place 30.00",
                                                  "sum_pass bytes=67108864 threads=2 in_place_gbps=30.00 "
                                                  "out_of_place_gbps=%.2f ratio=%.3f" % (30 * ratio, ratio)])
        text = self.summary()
        self.assertIn("in place 30.00 GB/s, out of place 19.50 GB/s, out-of-place/in-place 0.650", text)
        out = self.guard("compare", text)
        row = next(line for line in out.splitlines() if "out-of-place/in-place vs a sum pass's" in line)
        self.assertIn("| 0.80 | sum pass 0.65 | 1.23x | 1.00x | yes |", row)
        self.assertIn("| shm allreduce 2 ranks 64 MiB out-of-place vs in-place | 10.00 ms | in-place 8.00 ms | 0.80x",
                      out)

    @unittest.skipIf(importlib.util.find_spec("matplotlib") is None, "python3-matplotlib is not installed")
    def test_plot_draws_the_medians_as_busbw(self):
        # AllReduce, 2 ranks, 1 MiB: Weft 100 / 300 us out of place (median 200), Open MPI 400 us;
        # busbw = size / t * 2(n-1)/n, so 5.24288 and 2.62144 GB/s. AllGather, 4 ranks, 64 KiB: Weft
        # 10 us, busbw 6.5536 * 3/4. TCP: the net run's table (1 MiB, Weft 500 us: 2.097152 GB/s;
        # gloo did not run there, so it has no point). The title names the run's date and machine.
        for rep, w in ((1, 100), (2, 300)):
            self.write("weft_allreduce_n2.rep%d.txt" % rep, [weft_line(1 << 20, w, 150)])
            self.write("mpi_shm_n2.rep%d.txt" % rep, [mpi_line("allreduce", 2, 1 << 20, 400)])
        self.write("weft_allgather_n4.rep1.txt", [weft_line(65536, 10, 10)])
        with open(os.path.join(self.dir, "env.txt"), "w") as f:
            f.write("date: 2026-12-02T03:00:00+00:00\nCPU(s): 2\nModel name: Test CPU\n")
        net = os.path.join(self.dir, "net")
        os.makedirs(net)
        with open(os.path.join(net, "summary.md"), "w") as f:
            f.write("loopback TCP duplex bound (sum of both directions): 4.000 GB/s; ...\n\n"
                    "| bytes | Weft us | Weft busbw | Open MPI TCP us | busbw | gloo ring us | busbw | x | y |\n"
                    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                    "| 1048576 | 500.00 | 2.097 | 250.00 | 4.194 | nan | nan | 0.50x | 1.05 |\n")
        png, table = os.path.join(self.dir, "c.png"), os.path.join(self.dir, "c.csv")
        out = subprocess.run([sys.executable, os.path.join(BENCH, "plot_compare.py"), "--shm", self.dir, "--net",
                              net, "-o", png, "--csv", table], check=True, capture_output=True, text=True).stdout
        self.assertIn("medians of 2 interleaved repetitions; 2026-12-02, Test CPU, 2 cores", out)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        with open(table) as f:
            rows = {(r["panel"], r["series"], int(r["bytes"])): float(r["busbw_gbps"]) for r in csv.DictReader(f)}
        ar = "AllReduce, 2 ranks, shared memory"
        self.assertAlmostEqual(rows[(ar, "Weft out of place", 1 << 20)], 5.24288, places=4)
        self.assertAlmostEqual(rows[(ar, "Weft in place", 1 << 20)], 6.99051, places=4)
        self.assertAlmostEqual(rows[(ar, "Open MPI", 1 << 20)], 2.62144, places=4)
        self.assertAlmostEqual(rows[("AllGather, 4 ranks, shared memory", "Weft out of place", 65536)], 4.9152,
                               places=4)
        tcp = "AllReduce, 2 ranks, TCP over loopback"
        self.assertAlmostEqual(rows[(tcp, "Weft", 1 << 20)], 2.097152, places=4)
        self.assertAlmostEqual(rows[(tcp, "Open MPI TCP", 1 << 20)], 4.194304, places=4)
        self.assertFalse([k for k in rows if k[1] == "gloo ring"])
        self.assertEqual(len(rows), 7)  # the AllGather's in-place point besides


if __name__ == "__main__":
    unittest.main()
