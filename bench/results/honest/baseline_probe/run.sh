set -x
PY=/opt/torch/.venv/bin/python
bash bench/gpu_session.sh build > $OUT/build.txt 2>&1; tail -3 $OUT/build.txt
LIBDIR=$($PY - <<'P'
import torch,os
torch.ones(2,2,device='cuda',dtype=torch.bfloat16)@torch.ones(2,2,device='cuda',dtype=torch.bfloat16)
for l in open('/proc/self/maps'):
    p=l.split()[-1]
    if '/libcublasLt.so' in p: print(os.path.dirname(p)); break
P
)
echo LIBDIR=$LIBDIR
$PY bench/probe_baseline.py --json $OUT/probe1.json 2>&1 | tee $OUT/probe1.txt
LD_LIBRARY_PATH=$LIBDIR:.devdeps/lib build-dev/gemmtune check bench/results/honest/baseline_probe/sub.db --live 2>&1 | tee $OUT/check_live.txt
$PY bench/probe_baseline.py --json $OUT/probe2.json 2>&1 | tail -8 | tee $OUT/probe2.txt
