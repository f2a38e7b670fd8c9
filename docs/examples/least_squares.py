"""A distributed least-squares solve in the style of PyLops-MPI: the rows of A and b are split
over the ranks (a different number of rows on each), x is replicated, and every iteration sums
the ranks' gradients with one AllReduce.

    WEFT_DEVICE=host PYTHONPATH=<build>/python mpirun -n 4 /usr/bin/python3 docs/examples/least_squares.py

Steepest descent on f(x) = ||A x - b||^2 / 2: rank r holds A_r and b_r, computes its share of the
gradient A_r^T (A_r x - b_r) and of ||A g||^2, and the AllReduce of both gives every rank the same
step. At the end the rows are gathered with weft's uneven AllGather (all_gather_v) and the answer
is checked against numpy.linalg.lstsq on the whole A.
"""

import numpy as np

import weft

COLS = 12


def local_rows(rank):
    """Rank rank's block of the system: 40 + 7 * rank rows of a well-conditioned A, and b."""
    rng = np.random.default_rng(1234 + rank)
    rows = 40 + 7 * rank
    a = rng.standard_normal((rows, COLS)) + 3 * np.eye(rows, COLS)
    b = rng.standard_normal(rows)
    return a, b


def solve(comm, a, b, iters=500, tol=1e-10):
    x = np.zeros(COLS)
    for it in range(iters):
        g = a.T @ (a @ x - b)
        comm.all_reduce(g)  # in place: the gradient of the whole system, on every rank
        gnorm2 = g @ g
        if gnorm2 < tol**2:
            return x, it
        ag = a @ g
        step = np.array([ag @ ag])
        comm.all_reduce(step)  # ||A g||^2 = the sum of the ranks' ||A_r g||^2
        x = x - (gnorm2 / step[0]) * g
    return x, iters


def main():
    comm = weft.Communicator.from_mpi()
    a, b = local_rows(comm.rank)
    x, iters = solve(comm, a, b)

    # Check: gather every rank's rows (uneven blocks) and solve the whole system at once.
    counts = [local_rows(q)[0].size for q in range(comm.size)]
    whole = np.empty(sum(counts))
    comm.all_gather_v(a.ravel(), whole, counts)
    rhs_counts = [c // COLS for c in counts]
    rhs = np.empty(sum(rhs_counts))
    comm.all_gather_v(b, rhs, rhs_counts)
    want = np.linalg.lstsq(whole.reshape(-1, COLS), rhs, rcond=None)[0]
    err = np.linalg.norm(x - want) / np.linalg.norm(want)
    assert err < 1e-8, err
    comm.destroy()
    if comm.rank == 0:
        print(f"least_squares: {comm.size} ranks, {sum(rhs_counts)} x {COLS}, {iters} iterations, "
              f"relative error {err:.1e}: ok")


if __name__ == "__main__":
    main()
