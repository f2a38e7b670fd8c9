"""torch.distributed.run, usable with torch 1.13 under Python 3.11.

torch 1.13 reads --redirects and --tee ("0" by default) by looking the number up among the
members of its Std flag enum; from Python 3.11 on, iterating a flag enum skips the 0 member, so the
lookup yields None and every launch fails in to_map ("'NoneType' object has no attribute 'get'").
This wrapper replaces that lookup, where it is broken, by a direct conversion, then runs
torch.distributed.run's own main with the same arguments:

  /usr/bin/python3 tests/torch/torchrun.py --standalone --nproc_per_node 2 script.py
"""

import re

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, text):
    if re.fullmatch(r"[0-7]", text):
        return cls(int(text))
    return {int(i): cls(int(v)) for i, v in (pair.split(":") for pair in text.split(","))}


if api.Std.from_str("0") is None:
    api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main

    main()
