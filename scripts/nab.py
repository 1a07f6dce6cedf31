"""The NAB directory layout shared by detector-score and window-recurrence.

DIR holds data/**/*.csv (timestamp,value with a header) and
labels/combined_windows.json (each file's path under data/ maps to a
list of [start, end] windows). The first WARMUP share of each file's rows
is the detector's warm-up, and the halves are fixed: the files sorted by
path, even positions "tune", odd ones "held-out".

Only the Python standard library is used.
"""
import datetime
import json
import os

WARMUP = 0.15


def parse_time(s):
    """Parse the timestamps NAB and casebook write, as UTC."""
    s = s.strip().strip('"')
    if s.endswith("Z"):
        s = s[:-1]
    s = s.replace("T", " ")
    for layout in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.datetime.strptime(s, layout).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    raise ValueError("unparseable timestamp %r" % s)


def data_files(root):
    """The CSV files under root/data, as paths relative to it, sorted."""
    out = []
    base = os.path.join(root, "data")
    for dirpath, _, names in os.walk(base):
        for n in names:
            if n.endswith(".csv"):
                out.append(os.path.relpath(os.path.join(dirpath, n), base).replace(os.sep, "/"))
    return sorted(out)


def pick_half(files, half):
    if half == "tune":
        return files[0::2]
    if half == "held-out":
        return files[1::2]
    return files


def load_labels(root):
    """The label file's windows per file, and its path; ValueError or OSError when unreadable."""
    path = os.path.join(root, "labels", "combined_windows.json")
    with open(path) as f:
        return json.load(f), path
