{{/*
hami.compat: pods written for HAMi's Kunlunxin vXPU run on the device plugin's memory shares.

HAMi (github.com/Project-HAMi/HAMi, pkg/device/kunlun/vdevice.go) reads a container's
kunlunxin.com/vxpu (how many vXPUs, each on its own card) and kunlunxin.com/vxpu-memory (MiB per
vXPU, rounded up by trimMemory to 24576, 49152 or the whole 98304 MiB card; none: the whole
card). The device plugin's share form (devicePlugin.enableXpuShare with xpuShareMemoryUnitMiB)
counts <domain>/vxpu-memory in units of that many MiB, all from one card. The chart's admission
policies (admission-hami-compat.yaml) rewrite the first into the second and refuse, with the
reason, what has no equivalent here.

"xpu-k8s-shim.hami" checks the values once and returns the constants the policies are written
with, as JSON, or nothing when hami.compat is off:
  unit    MiB per unit of the device plugin's resource
  card    MiB of a whole card (hami.cardMemoryMiB; HAMi's KunlunMaxMemory by default)
  whole   units of a whole card: card / unit, rounded down (the device plugin advertises as many)
  steps   [[MiB, units], ...]: each of hami.memoryStepsMiB below the card, with its units
  target  the device plugin's resource, <domain>/vxpu-memory
  api     admissionregistration.k8s.io/v1, or v1beta1 where only that serves the mutating policy
*/}}
{{- define "xpu-k8s-shim.hami" -}}
{{- $hami := .Values.hami | default dict -}}
{{- if $hami.compat -}}
{{- $dp := .Values.devicePlugin -}}
{{- $domain := splitList "/" ($dp.customizedResourceName | default "kunlunxin.com/xpu") | first -}}
{{- if eq (include "xpu-k8s-shim.allocation" .) "dra" -}}
{{- fail "hami.compat maps HAMi's kunlunxin.com/vxpu and kunlunxin.com/vxpu-memory onto the device plugin's memory shares, and allocation=dra runs no device plugin: choose allocation=devicePlugin (or both)" -}}
{{- end -}}
{{- $unit := int ($dp.xpuShareMemoryUnitMiB | default 0) -}}
{{- if or (not $dp.enableXpuShare) (le $unit 0) -}}
{{- fail "hami.compat maps HAMi's requests onto the device plugin's memory shares: set devicePlugin.enableXpuShare=true and devicePlugin.xpuShareMemoryUnitMiB (1024 makes a unit a GiB)" -}}
{{- end -}}
{{- if $dp.useDetailResName -}}
{{- fail "hami.compat needs one memory resource for every card, and devicePlugin.useDetailResName advertises one per model: turn one of them off" -}}
{{- end -}}
{{- if and $dp.enableSriov (eq $domain "kunlunxin.com") -}}
{{- fail "hami.compat reads kunlunxin.com/vxpu as HAMi's vXPU count, and devicePlugin.enableSriov advertises SR-IOV virtual functions under that name: turn one of them off (or give the device plugin another domain with customizedResourceName)" -}}
{{- end -}}
{{- $card := int ($hami.cardMemoryMiB | default 0) -}}
{{- if le $card 0 -}}
{{- fail "hami.cardMemoryMiB is the MiB of a whole card, at least 1" -}}
{{- end -}}
{{- $whole := div $card $unit -}}
{{- if lt $whole 1 -}}
{{- fail (printf "hami.cardMemoryMiB (%d) is less than one unit of devicePlugin.xpuShareMemoryUnitMiB (%d)" $card $unit) -}}
{{- end -}}
{{- if gt $whole 256 -}}
{{- fail (printf "a whole card of hami.cardMemoryMiB (%d MiB) is %d units of devicePlugin.xpuShareMemoryUnitMiB (%d), and the device plugin advertises at most 256 per card: raise xpuShareMemoryUnitMiB to at least %d" $card $whole $unit (div (add $card 255) 256)) -}}
{{- end -}}
{{- $steps := list -}}
{{- $previous := 0 -}}
{{- range $hami.memoryStepsMiB | default list -}}
{{- $step := int . -}}
{{- if le $step $previous -}}
{{- fail (printf "hami.memoryStepsMiB must be whole MiB above 0 in ascending order, and %v is not above %d" . $previous) -}}
{{- end -}}
{{- $previous = $step -}}
{{- if lt $step $card -}}
{{- $steps = append $steps (list $step (min (div (add $step (sub $unit 1)) $unit) $whole)) -}}
{{- end -}}
{{- end -}}
{{- $api := "" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}
{{- $api = "admissionregistration.k8s.io/v1" -}}
{{- else if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy" -}}
{{- $api = "admissionregistration.k8s.io/v1beta1" -}}
{{- else -}}
{{- fail (printf "hami.compat rewrites HAMi's requests with a MutatingAdmissionPolicy, which this cluster (Kubernetes %s) does not serve: it is on by default from 1.36 (admissionregistration.k8s.io/v1); on 1.34 and 1.35 start the API server with --feature-gates=MutatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- dict "unit" $unit "card" $card "whole" $whole "steps" $steps "target" (printf "%s/vxpu-memory" $domain) "api" $api | toJson -}}
{{- end -}}
{{- end }}

{{/*
CEL of the variable `requests`: every container holding kunlunxin.com/vxpu (init containers too,
as HAMi's webhook reads them), each as a map of strings ('' where a name is absent: a quantity is
never empty): its JSON pointer, its name, and HAMi's count and memory as written, from limits or
else requests (HAMi's order), and in each of the two.
*/}}
{{- define "xpu-k8s-shim.hami.requests" -}}
{{- $fields := `{'path': '%s' + string(i), 'name': string(c.name),
'count': string(c.?resources.?limits[?'kunlunxin.com/vxpu'].orValue(c.?resources.?requests[?'kunlunxin.com/vxpu'].orValue(''))),
'memory': string(c.?resources.?limits[?'kunlunxin.com/vxpu-memory'].orValue(c.?resources.?requests[?'kunlunxin.com/vxpu-memory'].orValue(''))),
'countLimit': string(c.?resources.?limits[?'kunlunxin.com/vxpu'].orValue('')),
'countRequest': string(c.?resources.?requests[?'kunlunxin.com/vxpu'].orValue('')),
'memoryLimit': string(c.?resources.?limits[?'kunlunxin.com/vxpu-memory'].orValue('')),
'memoryRequest': string(c.?resources.?requests[?'kunlunxin.com/vxpu-memory'].orValue(''))}` -}}
{{- $holds := `c.?resources.?limits[?'kunlunxin.com/vxpu'].hasValue() || c.?resources.?requests[?'kunlunxin.com/vxpu'].hasValue()` -}}
object.spec.?initContainers.orValue([]).transformList(i, c, {{ $holds }},
{{ printf $fields "/spec/initContainers/" }}) +
object.spec.containers.transformList(i, c, {{ $holds }},
{{ printf $fields "/spec/containers/" }})
{{- end }}

{{/*
CEL of the variable `verdicts`: for each of `requests`, why it cannot be mapped, or '' when it
can. The one definition both policies use: the mutating one rewrites exactly the requests whose
verdict is '', the validating one refuses a pod with any request left, giving its verdict. Every
quantity is checked with isQuantity and isInteger before asInteger, which would fail admission
with a CEL error instead of a reason (numbers beyond int64, "1.5", "500m"). `.card`: a card's MiB.
*/}}
{{- define "xpu-k8s-shim.hami.verdicts" -}}
variables.requests.map(r,
variables.podProblem != '' ? variables.podProblem :
!(isQuantity(r.count) && quantity(r.count).isInteger()) || quantity(r.count).asInteger() < 1 ?
'kunlunxin.com/vxpu must be 1 (one vXPU, a share of one card), not ' + r.count :
quantity(r.count).asInteger() > 1 ?
'kunlunxin.com/vxpu: ' + r.count + ' asks a share of each of ' + r.count + ' cards, and a container gets a share of one card here: ask 1, in one container per card' :
r.countLimit != '' && r.countRequest != '' && r.countLimit != r.countRequest ||
r.memoryLimit != '' && r.memoryRequest != '' && r.memoryLimit != r.memoryRequest ?
'the requests and limits of kunlunxin.com/vxpu or kunlunxin.com/vxpu-memory differ' :
r.memory != '' && (!(isQuantity(r.memory) && quantity(r.memory).isInteger()) ||
quantity(r.memory).asInteger() < 1 || quantity(r.memory).asInteger() > {{ .card }}) ?
'kunlunxin.com/vxpu-memory must be a whole number of MiB from 1 to {{ .card }} (a whole card), not ' + r.memory :
'')
{{- end }}

{{/*
CEL of the variable `units`: for each of `requests`, the units of the device plugin's resource
(0 where its verdict is not ''). HAMi's rounding (trimMemory): up to the first of
memoryStepsMiB that holds the request, above them the whole card (without steps: up to whole
units); no memory: the whole card.
*/}}
{{- define "xpu-k8s-shim.hami.units" -}}
{{- $mib := "quantity(variables.requests[j].memory).asInteger()" -}}
lists.range(variables.requests.size()).map(j,
variables.verdicts[j] != '' ? 0 :
variables.requests[j].memory == '' ? {{ .whole }} :
{{- range .steps }}
{{ $mib }} <= {{ index . 0 }} ? {{ index . 1 }} :
{{- end }}
{{- if .steps }}
{{ .whole }})
{{- else }}
({{ $mib }} + {{ sub .unit 1 }}) / {{ .unit }} > {{ .whole }} ? {{ .whole }} :
({{ $mib }} + {{ sub .unit 1 }}) / {{ .unit }})
{{- end }}
{{- end }}

{{/*
CEL of the variable `podProblem`: what a pod asks of HAMi that cannot be honoured here, for all
its containers. Card selection by annotation (pkg/device/kunlun/vdevice.go Fit, CheckUUID:
HAMi's own keys and the earlier baidu.com ones; an empty value selects nothing, as in HAMi) and
the card policy mutex (only an idle card; pkg/util/types.go). The device plugin cannot choose
cards for a pod: the kubelet offers it only free units.
*/}}
{{- define "xpu-k8s-shim.hami.podProblem" -}}
{{- $keys := "['hami.io/use-xpu-uuid', 'hami.io/no-use-xpu-uuid', 'baidu.com/use-gpuuuid', 'baidu.com/nouse-gpuuuid']" -}}
{{- $set := "object.metadata.?annotations[?k].orValue('').trim() != ''" -}}
{{ $keys }}.exists(k, {{ $set }}) ?
'the annotation ' + {{ $keys }}.filter(k, {{ $set }})[0] +
' chooses cards, which HAMi does and this cluster cannot (the kubelet offers the device plugin free units, not the cards a pod names): remove it' :
object.metadata.?annotations[?'hami.io/gpu-scheduler-policy'].orValue('').split(',').exists(p, p.trim() == 'mutex') ?
'hami.io/gpu-scheduler-policy mutex (an idle card) cannot be honoured here: leave out kunlunxin.com/vxpu-memory to get a whole card' :
''
{{- end }}
