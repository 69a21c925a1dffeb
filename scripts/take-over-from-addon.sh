#!/bin/sh
# Clears the way for this chart on a cluster that runs the add-on it replaces.
#
# That add-on's objects carry exactly the names this chart uses (three DaemonSets, three service
# accounts, three cluster roles and their bindings), but no Helm ownership, so `helm install`
# refuses them ("invalid ownership metadata"). Adopting them in place (Helm's
# meta.helm.sh/release-* annotations) is no way over either: a DaemonSet's selector cannot
# change, and the add-on's selector is not the chart's. So this deletes them, the DaemonSets
# first and waiting until their pods are gone (a device plugin removes its socket as it stops,
# so the kubelet stops advertising its cards before the chart's plugin starts), then the RBAC.
# Pods that hold cards are not touched: the kubelet keeps their cards in its checkpoint and
# hands the chart's plugin only the others.
#
# Every object is looked at before any is deleted: one that a Helm release owns (this chart,
# already installed) stops the script with nothing deleted. Objects that are not there are
# skipped, so running it twice is harmless.
set -eu

usage() {
  cat <<'EOF'
usage: take-over-from-addon.sh [--namespace NAMESPACE] [--dry-run]
  --namespace  where the add-on's DaemonSets and service accounts are (default: kube-system)
  --dry-run    list what would be deleted, delete nothing
environment: KUBECTL (default: kubectl) and whatever it reads (KUBECONFIG)
EOF
}

namespace=kube-system
dry_run=false
while [ $# -gt 0 ]; do
  case $1 in
    --namespace)
      [ $# -ge 2 ] || { echo "take-over-from-addon: --namespace needs a value" >&2; exit 2; }
      namespace=$2
      shift 2
      ;;
    --namespace=*) namespace=${1#*=}; shift ;;
    --dry-run) dry_run=true; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "take-over-from-addon: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$namespace" ] || { echo "take-over-from-addon: --namespace is empty" >&2; exit 2; }
kubectl=${KUBECTL:-kubectl}

# In the order they are deleted: the pods' owners first, then who they ran as.
daemonsets="daemonset/xpu-device-plugin-daemonset daemonset/xpu-exporter daemonset/xpu-rbac-token-gen"
rbac="clusterrolebinding/xpu-device-plugin clusterrolebinding/xpu-exporter clusterrolebinding/klx-xpu-binding
clusterrole/xpu-device-plugin clusterrole/xpu-exporter clusterrole/klx-xpu-clusterrole
serviceaccount/xpu-device-plugin serviceaccount/xpu-exporter serviceaccount/klx-xpu-serviceaccount"

# "<name> <helm release>" for an object that is there, nothing for one that is not; kubectl's
# own error (no access, no cluster) stops the script.
look_at() {
  "$kubectl" get --namespace "$namespace" "$1" --ignore-not-found \
    -o 'jsonpath={.metadata.name}{" "}{.metadata.annotations.meta\.helm\.sh/release-name}'
}

present=""
for object in $daemonsets $rbac; do
  found=$(look_at "$object") || {
    echo "take-over-from-addon: could not read $object in namespace $namespace (above); nothing deleted" >&2
    exit 1
  }
  [ -n "$found" ] || { echo "not found: $object"; continue; }
  release=${found#* }
  if [ -n "$release" ]; then
    echo "take-over-from-addon: $object belongs to Helm release '$release': this chart is already" \
      "installed, not the add-on; nothing deleted (use helm upgrade)" >&2
    exit 1
  fi
  present="$present $object"
done

if [ -z "$present" ]; then
  echo "none of the add-on's objects is in namespace $namespace or the cluster: nothing to do"
  exit 0
fi
for object in $present; do
  if $dry_run; then
    echo "would delete: $object"
    continue
  fi
  case $object in
    # Foreground: the DaemonSet goes only once its pods are gone from the API, that is once the
    # kubelet has seen their containers stop.
    daemonset/*) "$kubectl" delete --namespace "$namespace" "$object" --cascade=foreground --wait=true --timeout=300s ;;
    *) "$kubectl" delete --namespace "$namespace" "$object" --wait=true ;;
  esac
done
