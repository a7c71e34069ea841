import json, statistics as st
rows = [json.load(open(f"/tmp/exp/rows{r}.json")) for r in (0, 1)]
trs = [json.load(open(f"/tmp/exp/tr{r}.json"))["ops"] for r in (0, 1)]
reps = len(rows[0])
for r in (0, 1):
    ops = trs[r][-2*reps:][0::2]  # timed ops
    ent = [(o["started_ns"]/1e9 - c) * 1e6 for o, (c, _) in zip(ops, rows[r])]
    ran = [(o["ended_ns"] - o["started_ns"]) / 1e3 for o in ops]
    ext = [(ret - o["ended_ns"]/1e9) * 1e6 for o, (_, ret) in zip(ops, rows[r])]
    # ran from the last rank's start
    print(f"rank {r}: entry med {st.median(ent):.1f} ran med {st.median(ran):.1f} exit med {st.median(ext):.1f}")
o0 = trs[0][-2*reps:][0::2]; o1 = trs[1][-2*reps:][0::2]
lastStart = [max(a["started_ns"], b["started_ns"]) for a, b in zip(o0, o1)]
lastEnd = [max(a["ended_ns"], b["ended_ns"]) for a, b in zip(o0, o1)]
print("ran from last start med", st.median([(e - s)/1e3 for s, e in zip(lastStart, lastEnd)]))
