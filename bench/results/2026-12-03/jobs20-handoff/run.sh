echo $$ > /sys/fs/cgroup/cpu/bench/tasks
cd /work/main
OUT=bench/results/2026-12-03/jobs20-handoff
CMD=".venv/bin/python -m torch_hccl_go.bench --jobs 20 --backends hccl_go --peers deepspeed,mpi --sizes 8,64K,1M,16M --max-time 0.3 --json $OUT/jobs20.json"
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD): $CMD" > $OUT/command.txt
$CMD > $OUT/jobs20.txt 2>&1
echo "rc=$?" >> $OUT/jobs20.txt
