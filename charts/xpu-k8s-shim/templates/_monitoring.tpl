{{/*
The scrape endpoint shared by the ServiceMonitor and the PodMonitor. `instance` becomes the
node's name: there is one exporter per node, and alerts and the dashboard then name the node
rather than a pod IP that changes with every restart.
*/}}
{{- define "xpu-k8s-shim.scrapeEndpoint" -}}
{{- $monitor := .monitor -}}
port: metrics
path: /metrics
scheme: {{ include "xpu-k8s-shim.exporterScheme" .root | lower }}
{{- with $monitor.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $monitor.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
interval: {{ $monitor.interval | quote }}
{{- with $monitor.scrapeTimeout }}
scrapeTimeout: {{ . | quote }}
{{- end }}
relabelings:
  - sourceLabels: [__meta_kubernetes_pod_node_name]
    targetLabel: instance
    action: replace
{{- end }}

{{/*
HTTP or HTTPS: what the exporter speaks under exporter.webConfig (probeScheme says which when a
web config is mounted). The probes, the prometheus.io/scheme annotation and the monitors share it.
*/}}
{{- define "xpu-k8s-shim.exporterScheme" -}}
{{- $web := .Values.exporter.webConfig | default dict -}}
{{- ternary ($web.probeScheme | default "HTTPS") "HTTP" (not (empty $web.secretName)) -}}
{{- end }}

{{/*
One of ServiceMonitor or PodMonitor: both would scrape every exporter twice and double every sum.
*/}}
{{- define "xpu-k8s-shim.checkMonitors" -}}
{{- if and .Values.exporter.serviceMonitor.enabled .Values.exporter.podMonitor.enabled -}}
{{- fail "exporter.serviceMonitor.enabled and exporter.podMonitor.enabled: enable one, not both (each exporter would be scraped twice)" -}}
{{- end -}}
{{- end }}
