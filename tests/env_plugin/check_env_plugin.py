#!/usr/bin/env python3
"""Checks NCCL_ENV_PLUGIN with the example plugin (example_env_plugin.c answers NAME with the
process's ENVPLUGIN_NAME): its answers replace the process environment for every parameter, none
and a missing or failing plugin leave the process environment in charge with a warning, init and
finalize both run, and a real job takes its settings from the plugin (a trace it was told to write).
With --abi 2 (the plugin exports ncclEnvPlugin_v2), what the plugin logs through the logger init
gave it reaches Weft's log under the NCCL_DEBUG the plugin itself answers, including the lines it
logs while that setting is being read.

  check_env_plugin.py --plugin LIB --abi 1|2 --info WEFT_INFO --job TRACE_JOB --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("check_env_plugin: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def info(exe, env):
    r = subprocess.run([exe, "--json"], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("weft-info exited with %d: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    return doc["environment"], {p["name"]: p for p in doc["parameters"]}, r.stderr


def main():
    p = argparse.ArgumentParser()
    for a in ("--plugin", "--info", "--job", "--work"):
        p.add_argument(a, required=True)
    p.add_argument("--abi", type=int, choices=(1, 2), required=True)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "WEFT_", "ENVPLUGIN_"))}
    base.update(NCCL_BUFFSIZE="1048576", WEFT_SPIN_US="7")

    # The plugin answers: its NCCL_BUFFSIZE wins, and WEFT_SPIN_US, which it does not define, is
    # unset even though the process has it (the plugin replaces the environment, as in NCCL).
    done = os.path.join(args.work, "finalized.txt")
    env = dict(base, NCCL_ENV_PLUGIN=args.plugin, ENVPLUGIN_NCCL_BUFFSIZE="4194304", ENVPLUGIN_FINALIZE_FILE=done)
    where, params, _ = info(args.info, env)
    if "weft-example-env" not in where or ("ABI v%d" % args.abi) not in where:
        fail("weft-info says the parameters come from: " + where)
    if str(params["NCCL_BUFFSIZE"]["value"]) != "4194304" or params["WEFT_SPIN_US"]["set"]:
        fail("with the plugin: NCCL_BUFFSIZE %s, WEFT_SPIN_US %s" % (params["NCCL_BUFFSIZE"], params["WEFT_SPIN_US"]))
    if params["NCCL_ENV_PLUGIN"]["value"] != args.plugin:
        fail("NCCL_ENV_PLUGIN reads %r" % params["NCCL_ENV_PLUGIN"]["value"])
    if not os.path.exists(done) or "2.30.7" not in open(done).read():
        fail("finalize did not run after init at exit (no %s with the version)" % done)

    # v2's logger: the init line and a WARN from getEnv, printed under the plugin's own NCCL_DEBUG
    # (the process's says nothing), with NCCL_DEBUG_SUBSYS=ENV for the INFO line.
    env = dict(base, NCCL_ENV_PLUGIN=args.plugin, ENVPLUGIN_NCCL_DEBUG="INFO", ENVPLUGIN_NCCL_DEBUG_SUBSYS="ENV",
               ENVPLUGIN_WARN_ON="NCCL_BUFFSIZE", NCCL_DEBUG="")
    _, _, err = info(args.info, env)
    lines = {"initialised for NCCL 2.30.7": "INFO", "was asked for NCCL_BUFFSIZE": "WARN"}
    for text, level in lines.items():
        hits = [l for l in err.splitlines() if text in l]
        if args.abi == 2 and not any((" %s " % level) in l and "env plugin: weft-example-env v2" in l for l in hits):
            fail("the v2 plugin's %s line %r is not in the log:\n%s" % (level, text, err))
        if args.abi == 1 and hits:
            fail("a v1 plugin has no logger, yet the log says: %s" % hits)

    # none, a library that is not there, and an init that fails: the process environment answers.
    for setting, extra, why in (("none", {}, None), (os.path.join(args.work, "missing.so"), {}, "cannot load"),
                                (args.plugin, {"ENVPLUGIN_FAIL_INIT": "1"}, "init returned")):
        # NCCL_DEBUG=WARN: warnings print only when asked for.
        env = dict(base, NCCL_ENV_PLUGIN=setting, ENVPLUGIN_NCCL_BUFFSIZE="4194304", NCCL_DEBUG="WARN", **extra)
        where, params, err = info(args.info, env)
        if str(params["NCCL_BUFFSIZE"]["value"]) != "1048576" or str(params["WEFT_SPIN_US"]["value"]) != "7":
            fail("NCCL_ENV_PLUGIN=%s: the process environment did not answer" % setting)
        if why is not None and (why not in where or why not in err):
            fail("NCCL_ENV_PLUGIN=%s: no warning saying %r (environment: %s; stderr: %s)" % (setting, why, where, err))

    # A job of 2 ranks reads its settings through the plugin: only the plugin asks for a trace.
    trace = os.path.join(args.work, "rank%r.json")
    env = dict(base, NCCL_ENV_PLUGIN=args.plugin, ENVPLUGIN_WEFT_DEVICE="host", ENVPLUGIN_WEFT_TRACE_FILE=trace)
    r = subprocess.run([args.job, "2"], env=env, timeout=120)
    if r.returncode != 0:
        fail("the job under the plugin exited with %d" % r.returncode)
    for rank in (0, 1):
        path = trace.replace("%r", str(rank))
        if not os.path.exists(path):
            fail("the plugin's WEFT_TRACE_FILE was not used: no " + path)
        json.load(open(path))
    print("check_env_plugin: ok")


if __name__ == "__main__":
    main()
