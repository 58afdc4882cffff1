#!/usr/bin/env bash
# Rebuild the models and check that each binary has the sha256 recorded in its card.json.
#   bash lm_models/check_repro.sh PYTHON [LANGS...]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${1:-python3}"; shift || true
LANGS="${*:-en de fr es it ru zh ja pt nl pl cs tr id vi sv hu el ko uk ro da fi}"
declare -A before
for l in $LANGS; do
    before[$l]=$("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['sha256'])" "$HERE/$l/card.json")
done
make -C "$HERE" corpora models PYTHON="$PYTHON" LANGS="$LANGS"
status=0
for l in $LANGS; do
    path=$("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))['path'])" "$HERE/$l/card.json")
    now=$(sha256sum "$HERE/../$path" | cut -d' ' -f1)
    if [[ "$now" == "${before[$l]}" ]]; then
        echo "check_repro: $l identical ($now)"
    else
        echo "check_repro: $l DIFFERS: card ${before[$l]} rebuilt $now"; status=1
    fi
done
exit $status
