"""The process tree of a check, read from ps: what the torch tests and the torch report (tools/report/torch_checks_report.py) look at to say no rank is left behind."""
import os
import subprocess


def processes():
    out = subprocess.run(["ps", "-o", "pid=,ppid=,cmd=", "-e"], capture_output=True, text=True).stdout
    return [(int(pid), int(ppid), cmd) for pid, ppid, cmd in (line.split(None, 2) for line in out.splitlines())]


def descendants(root):
    rows, found, frontier = processes(), [], {root}
    while frontier:
        children = [(pid, cmd) for pid, ppid, cmd in rows if ppid in frontier]
        found += children
        frontier = {pid for pid, _ in children}
    return found


def rank_processes():
    """This process's rank processes: the forkserver's children (the forkserver itself may stay)."""
    servers = {pid for pid, cmd in descendants(os.getpid()) if "forkserver" in cmd}
    return [cmd for pid, ppid, cmd in processes() if ppid in servers]
