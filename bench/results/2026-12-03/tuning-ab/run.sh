echo $$ > /sys/fs/cgroup/cpu/bench/tasks
cd /work/main
for i in $(seq 1 ${ROUNDS:-4}); do for v in $VARIANTS; do
  cp /tmp/ab/$v.so python/torch_hccl_go/lib/libhccl_go.so.ab && mv python/torch_hccl_go/lib/libhccl_go.so.ab python/torch_hccl_go/lib/libhccl_go.so
  .venv/bin/python -m torch_hccl_go.bench --backends hccl_go --ops ${OPS} --sizes ${SIZES} --max-time ${MT:-0.2} --no-progress --json /tmp/ab/k_${v}_$i.json > /dev/null 2>&1 || echo "fail $v $i"
done; done
cp /tmp/ab/base.so python/torch_hccl_go/lib/libhccl_go.so.ab && mv python/torch_hccl_go/lib/libhccl_go.so.ab python/torch_hccl_go/lib/libhccl_go.so
echo finished
