{{/*
Labels every object carries. `component` is the role: device-plugin, exporter or token-sync.
*/}}
{{- define "xpu-k8s-shim.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: xpu-k8s-shim
{{ include "xpu-k8s-shim.selectorLabels" . }}
{{- end }}

{{- define "xpu-k8s-shim.selectorLabels" -}}
app.kubernetes.io/name: xpu-k8s-shim
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The one image every role runs, `role` being its key under `images`. Its tag, first found of:
global.image.tag; the role's images.<role>.tag when a user set it to something other than the
seed's default; the chart's appVersion, which is the tag packaging/container/build-image.sh gives
the image. values.yaml keeps the seed's per-role defaults (every seed key keeps its default), but
those tags named the replaced add-on's three images, which no build of this image produces.
*/}}
{{- define "xpu-k8s-shim.image" -}}
{{- $image := .root.Values.global.image -}}
{{- $seedTags := dict "devicePlugin" "v5.0.2-alpha.3" "exporter" "v5.0.3-alpha.6" "rbacTokenGen" "v1.0.0" -}}
{{- $roleTag := dig .role "tag" "" (.root.Values.images | default dict) | toString -}}
{{- if eq $roleTag (get $seedTags .role) }}{{ $roleTag = "" }}{{ end -}}
{{- $tag := $image.tag | default $roleTag | default .root.Chart.AppVersion | toString -}}
{{- if not $tag }}{{ fail "the image tag is empty: set global.image.tag, images.<role>.tag or the chart's appVersion" }}{{ end -}}
{{- if $image.host -}}
{{ printf "%s/%s:%s" (trimSuffix "/" $image.host) $image.repository $tag }}
{{- else -}}
{{ printf "%s:%s" $image.repository $tag }}
{{- end -}}
{{- end }}

{{/*
Arguments every role takes after its name (see "Command lines" in the architecture):
verbosity, log level (only when set, since it wins over --v) and memory unit.
*/}}
{{- define "xpu-k8s-shim.commonArgs" -}}
- --v
- {{ .Values.config.logVerbose | quote }}
{{- with .Values.config.logLevel }}
- --log-level
- {{ . | quote }}
{{- end }}
- --memory-unit
- {{ .Values.config.memoryUnit | quote }}
{{- end }}

{{/*
The resource name flags, passed alike to the device plugin (what it advertises) and the exporter
(which pod-resources entries are XPUs), so pods keep their labels under a customised name.
*/}}
{{- define "xpu-k8s-shim.resourceNameArgs" -}}
{{- $dp := .Values.devicePlugin -}}
{{- if $dp.useDetailResName }}
- --resource-per-model
{{- end }}
{{- with $dp.customizedResourceName }}
- --resource-name
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
No privilege at all: the shim reaches the host only through the sockets mounted into it.
It runs as uid 0 only because the kubelet's socket directories are root's (0755/0750) and a
socket can be created or connected to only with write permission on it. Without capabilities
and without the host's system bus (where uid 0 is host root), that uid reaches nothing but the
mounted sockets and directories.
*/}}
{{- define "xpu-k8s-shim.containerSecurityContext" -}}
runAsUser: 0
runAsGroup: 0
runAsNonRoot: false
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "xpu-k8s-shim.podSecurityContext" -}}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Scheduling shared by the three DaemonSets.
*/}}
{{- define "xpu-k8s-shim.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- /* The chart's own pods start on a node the device plugin is handing over
(devicePlugin.handoverTaint): the DRA driver that takes it over among them. */}}
tolerations:
  {{- with .Values.tolerations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  - key: kunlunxin.com/xpu-handover
    operator: Exists
    effect: NoSchedule
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.global.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
xpud's read-only API socket (the host package's xpud-api-proxy.socket), every pod's way to xpud
but the device plugin's with devicePlugin.reconfigVxpu (xpudApiSriovVolume below). The directory
is mounted, not the socket, so a proxy restart that recreates the socket is seen by running pods. The host's system bus is never mounted: uid 0 there is host root.
*/}}
{{- define "xpu-k8s-shim.xpudApiVolume" -}}
- name: xpud-api
  hostPath:
    path: /run/xpud-api
    type: Directory
{{- end }}

{{- define "xpu-k8s-shim.xpudApiVolumeMount" -}}
- name: xpud-api
  mountPath: /run/xpud-api
  readOnly: true
{{- end }}

{{/*
Global arguments (before the role name) of the roles that talk to xpud.
*/}}
{{- define "xpu-k8s-shim.xpudApiArgs" -}}
- --bus-address
- unix:path=/run/xpud-api/bus.sock
{{- end }}

{{/*
xpud's SR-IOV socket (the host package's xpud-api-proxy-sriov.socket): the same reads as the
read-only socket plus the one write, ConfigureVirtualFunctions, which the read-only socket
refuses to everyone. Mounted into the device plugin's pod alone, and only with
devicePlugin.reconfigVxpu; no other pod ever gets it. The host keeps it root's (socket 0600 in a
0700 directory), so only a uid-0 pod that mounts it connects. The plugin then reaches xpud
through this socket alone: its reads work there too, so it needs no second directory of the host.
Type Directory: a node whose xpud package has no such socket (an older package, or the socket
masked) keeps the pod from starting, with an event naming the path, rather than running a
plugin that cannot do what reconfigVxpu asks.
*/}}
{{- define "xpu-k8s-shim.xpudApiSriovVolume" -}}
- name: xpud-api-sriov
  hostPath:
    path: /run/xpud-api-sriov
    type: Directory
{{- end }}

{{- define "xpu-k8s-shim.xpudApiSriovVolumeMount" -}}
- name: xpud-api-sriov
  mountPath: /run/xpud-api-sriov
  readOnly: true
{{- end }}

{{- define "xpu-k8s-shim.xpudApiSriovArgs" -}}
- --bus-address
- unix:path=/run/xpud-api-sriov/bus.sock
{{- end }}

{{/*
"true" when the chart renders the replaced add-on's RBAC (rbac.compat): its ClusterRoles and
tokens for the device plugin and the exporter, and nodes/proxy in klx-xpu-clusterrole; empty
otherwise. rbac.minimal, this chart's earlier switch the other way, is refused when false rather
than silently ignored: what it selected is now the default, and rbac.compat is the one way back.
*/}}
{{- define "xpu-k8s-shim.rbacCompat" -}}
{{- if and (hasKey .Values.rbac "minimal") (eq (toString .Values.rbac.minimal) "false") }}
{{- fail "rbac.minimal=false is gone: each role now gets only what it calls by default; set rbac.compat=true for the replaced add-on's rules (README: RBAC)" }}
{{- end }}
{{- if and .Values.rbac.compat .Values.rbac.minimal }}
{{- fail "rbac.compat=true and rbac.minimal=true contradict each other: drop rbac.minimal, whose rules are the default" }}
{{- end }}
{{- if .Values.rbac.compat }}true{{ end }}
{{- end }}

{{/*
"true" when the device plugin's and the exporter's pods mount a service-account token: only for
the replaced add-on's rules (rbac.compat). Neither role calls the API server: they read the cards
from xpud and the pods from the kubelet's sockets.
*/}}
{{- define "xpu-k8s-shim.nodeRoleToken" -}}
{{- if include "xpu-k8s-shim.rbacCompat" . }}true{{ else }}false{{ end }}
{{- end }}

{{/*
"true" when the role that hands out cards on a node (the device plugin, or the DRA driver) keeps
the node's XPUHealthy condition and its kunlunxin.com/xpu.ready label (nodeStatus.enabled,
default true); empty otherwise.
*/}}
{{- define "xpu-k8s-shim.nodeStatus" -}}
{{- if dig "enabled" true (.Values.nodeStatus | default dict) }}true{{ end }}
{{- end }}

{{/*
"true" when the device plugin's pod mounts a service-account token: to write its node's status
(nodeStatus.enabled), or for the replaced add-on's rules (rbac.compat).
*/}}
{{- define "xpu-k8s-shim.devicePluginToken" -}}
{{- if or (include "xpu-k8s-shim.nodeStatus" .) (include "xpu-k8s-shim.rbacCompat" .) }}true{{ else }}false{{ end }}
{{- end }}

{{/*
The kubelet's pod-resources directory, read-only: the exporter reads which pod holds which card;
the device plugin and the DRA driver read which cards pods hold through the other of them, and
leave those out while held, so a node that changes its allocation mode never hands a card out
twice. Only the directory of the socket, as the kubelet serves it.
*/}}
{{- define "xpu-k8s-shim.podResourcesVolume" -}}
- name: pod-resources
  hostPath:
    path: /var/lib/kubelet/pod-resources
    type: Directory
{{- end }}

{{- define "xpu-k8s-shim.podResourcesVolumeMount" -}}
- name: pod-resources
  mountPath: /var/lib/kubelet/pod-resources
  readOnly: true
{{- end }}
