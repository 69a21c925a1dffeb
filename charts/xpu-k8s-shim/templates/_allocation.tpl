{{/*
How pods get cards (.Values.allocation): "devicePlugin" (the extended resource, as the replaced
add-on), "dra" (ResourceClaims of the DeviceClass xpu.kunlunxin.com) or "both", which would hand
a card out twice if both ran on one node: it needs dra.nodeSelector, and the device plugin then
stays off the nodes that selector picks. Checked here once; every template that depends on the
mode includes "xpu-k8s-shim.allocation" to get the validated value.
*/}}
{{- define "xpu-k8s-shim.allocation" -}}
{{- $mode := .Values.allocation | default "devicePlugin" | toString -}}
{{- if not (has $mode (list "devicePlugin" "dra" "both")) -}}
{{- fail (printf "allocation: %q is not one of devicePlugin, dra, both" $mode) -}}
{{- end -}}
{{- if and (eq $mode "both") (not .Values.dra.nodeSelector) -}}
{{- fail "allocation=both would hand every card out twice, once by the device plugin and once by the DRA driver: set dra.nodeSelector to a label that only the DRA nodes carry (the device plugin then avoids those nodes), or choose devicePlugin or dra" -}}
{{- end -}}
{{- $mode -}}
{{- end }}

{{/*
With allocation=both, the device plugin's nodes are those that do not match dra.nodeSelector:
one term per label (terms are ORed), each true where that label is missing or different.
*/}}
{{- define "xpu-k8s-shim.devicePluginAvoidsDraNodes" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        {{- range $key, $value := .Values.dra.nodeSelector }}
        - matchExpressions:
            - key: {{ $key | quote }}
              operator: NotIn
              values: [{{ $value | toString | quote }}]
        {{- end }}
{{- end }}
