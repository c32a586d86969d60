# Sourced by the qd1-*-exp.sh scripts (run from the repository root): the stallscope to run on
# 2 cores (a bundle where one is carried, else this tree's build), the 2,000-file directory,
# the host's lines, and val FILE.json: the first variant's idle % / fetch capacity samples/s.
if [ -x bundle/bin/stallscope ]; then
  export LD_LIBRARY_PATH=$PWD/bundle/lib; X=$PWD/bundle/bin/stallscope
else
  X=$PWD/build/tools/stallscope
fi
T="taskset -c 0,1"; B="$T $X"
D=${DATA:-$PWD/qd1-data}; O=${OUT:-/tmp}
lscpu | grep -E "Model name"; uname -r; date -u
[ -d "$D" ] || { $B gen --samples 2000 --quiet "$D"; sync; }
val(){ python3 -c "import json;v=json.load(open('$1'))['variants'][0];print('%.1f/%.0f' % (v['gpu_idle_fraction']*100, v['bottleneck']['capacity_samples_per_second'].get('fetch',0)))"; }
