#!/usr/bin/env bash
# Deploys a kustomization of deploy/kubernetes/base (the base itself, or your overlay with its images and host):
# the namespaces, the Secret `aop-env` when AOP_ENV_FILE names an env file, then the migration Job, run to completion
# BEFORE anything else is applied, then the rest, and waits for the rollouts. A failed migration stops here, with the
# Job's log, while the previous version keeps serving.
#
#   AOP_ENV_FILE=aop.env deploy/kubernetes/deploy.sh deploy/kubernetes/overlays/production
#
# Needs kubectl (with its built-in kustomize) and a context with the rights to create these objects.
set -euo pipefail

dir="${1:-$(dirname "$0")/base}"
ns=aop

echo "==> namespaces"
kubectl apply -k "$dir" -l app.kubernetes.io/component=namespace

if [ -n "${AOP_ENV_FILE:-}" ]; then
  echo "==> secret aop-env from $AOP_ENV_FILE"
  kubectl -n "$ns" create secret generic aop-env --from-env-file="$AOP_ENV_FILE" --dry-run=client -o yaml | kubectl apply -f -
fi
kubectl -n "$ns" get secret aop-env >/dev/null || {
  echo "The Secret aop-env is missing in namespace $ns: set AOP_ENV_FILE (see deploy/kubernetes/aop.env.example)." >&2
  exit 1
}

# A Job's template cannot change: the previous run goes first (it has finished; its log goes with it).
echo "==> migrations"
kubectl -n "$ns" delete job aop-migrate --ignore-not-found --wait=true
kubectl apply -k "$dir" -l app.kubernetes.io/component=migrate
for _ in $(seq 1 120); do
  if [ "$(kubectl -n "$ns" get job aop-migrate -o jsonpath='{.status.succeeded}')" = "1" ]; then break; fi
  if [ "$(kubectl -n "$ns" get job aop-migrate -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')" = "True" ]; then
    kubectl -n "$ns" logs job/aop-migrate --tail=50 || true
    echo "The migration failed: nothing else was changed." >&2
    exit 1
  fi
  sleep 5
done
[ "$(kubectl -n "$ns" get job aop-migrate -o jsonpath='{.status.succeeded}')" = "1" ] || {
  echo "The migration did not finish in 10 minutes." >&2
  exit 1
}
kubectl -n "$ns" logs job/aop-migrate --tail=20 || true

echo "==> rollout"
kubectl apply -k "$dir"
for deployment in aop-backend aop-summarizer aop-web; do
  kubectl -n "$ns" rollout status "deployment/$deployment" --timeout=10m
done
