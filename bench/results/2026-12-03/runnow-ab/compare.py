"""Per variant, the median over jobs of each job's median over its batches in the VM's fast
cross-CPU state: python3 compare.py [FOLDER] (default: this one)."""
import glob, json, statistics, collections, sys, os
folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = collections.defaultdict(lambda: collections.defaultdict(list))
allh = []
docs = []
for f in sorted(glob.glob(os.path.join(folder, "*_*_*.json"))):
    v = os.path.basename(f).split("_")[1]; d = json.load(open(f)); docs.append((v, d))
    for r in d["results"]: allh += [x for x in r.get("handoff_ns", []) if x]
thr = 2 * min(allh)
for v, d in docs:
    for r in d["results"]:
        if r["status"] != "ok": continue
        bt = r["batch_times_us"]; h = r["handoff_ns"]
        fast = [t for k, t in enumerate(bt) if all(x is not None and x <= thr for x in h[k:k+2])]
        rows[(r["op"], r["size"])][v].append((statistics.median(fast) if fast else None, r["time_us"], len(fast)/len(bt)))
print(f"threshold {thr:.0f} ns")
for k, vs in rows.items():
    o = [x[0] for x in vs["old"] if x[0]]; n = [x[0] for x in vs["new"] if x[0]]
    oa = [x[1] for x in vs["old"]]; na = [x[1] for x in vs["new"]]
    if o and n:
        print(f"{k[0]:15s} {k[1]:>8d}  fast-state med old {statistics.median(o):8.1f} new {statistics.median(n):8.1f} ratio {statistics.median(n)/statistics.median(o):5.2f} | all med old {statistics.median(oa):8.1f} new {statistics.median(na):8.1f} | fastshare old {statistics.mean(x[2] for x in vs['old']):.2f} new {statistics.mean(x[2] for x in vs['new']):.2f}")
