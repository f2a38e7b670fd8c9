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

# torch's launcher picks the workers' MASTER_PORT by binding a free port and closing it again; rank
# 0 binds it once more seconds later, when it starts (torch's own comment calls this a race). Any
# process on the machine, such as another test run side by side, can take the port in between, and
# the launch then fails before Weft is reached. With --retry-bind-race the launch runs again, at
# most twice more, when and only when it failed that way; anything else fails at once.
_BIND_RACE = ("failed to bind", "Address already in use")


def _launch_with_retries(args):
    import subprocess
    import sys

    for attempt in range(3):
        run = subprocess.run([sys.executable, __file__] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        text = run.stdout.decode(errors="replace")
        sys.stdout.write(text)
        sys.stdout.flush()
        if run.returncode == 0 or not all(s in text for s in _BIND_RACE) or attempt == 2:
            return run.returncode
        print(f"torchrun.py: the launch lost its MASTER_PORT to another process; launching again ({attempt + 2} of 3)")
    return 1


if __name__ == "__main__":
    import sys

    if "--retry-bind-race" in sys.argv[1:]:
        sys.exit(_launch_with_retries([a for a in sys.argv[1:] if a != "--retry-bind-race"]))
    from torch.distributed.run import main

    main()
