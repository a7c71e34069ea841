cd /work/main
for i in $(seq 1 ${ROUNDS:-4}); do for v in old new; do
  cp /tmp/ab/$v.so python/torch_hccl_go/lib/libhccl_go.so.ab && mv python/torch_hccl_go/lib/libhccl_go.so.ab python/torch_hccl_go/lib/libhccl_go.so
  .venv/bin/python -m torch_hccl_go.bench --backends hccl_go --ops ${OPS:-all_reduce,broadcast,all_gather,reduce_scatter,reduce,all_to_all} --sizes ${SIZES:-8,64K,1M} --max-time ${MT:-0.2} --no-progress --json /tmp/ab/j_${v}_$i.json > /dev/null 2>&1 || echo "fail $v $i"
done; done
cp /tmp/ab/new.so python/torch_hccl_go/lib/libhccl_go.so.ab && mv python/torch_hccl_go/lib/libhccl_go.so.ab python/torch_hccl_go/lib/libhccl_go.so
