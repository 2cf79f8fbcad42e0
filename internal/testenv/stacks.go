package testenv

import (
	"fmt"
	"path"
)

// MonitoringStack returns the files (name -> content, each below dir) of an
// app in namespace ns written the way public manifests are: zero
// values spelled out (minReadySeconds: 0, readOnly: false, hostNetwork:
// false, annotations: {}), quantities in another unit than the server's
// (1000m, 1024Mi), ports without protocol, targetPort by number and by
// name, an env fieldRef without apiVersion, and a Lease whose acquireTime
// has a UTC offset (the server stores it in UTC). The drift tests of
// syncd drift and of the daemon sync it and expect no finding.
func MonitoringStack(dir, ns string) map[string]string {
	return map[string]string{
		path.Join(dir, "grafana.yaml"): fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: grafana, namespace: %[1]s, labels: {app: grafana}, annotations: {}}
spec:
  replicas: 1
  minReadySeconds: 0
  selector: {matchLabels: {app: grafana}}
  template:
    metadata: {labels: {app: grafana}}
    spec:
      hostNetwork: false
      containers:
      - name: grafana
        image: grafana/grafana:11.0.0
        ports: [{name: http, containerPort: 3000}]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        resources:
          limits: {cpu: 1000m, memory: 1024Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/grafana, readOnly: false}
      volumes:
      - name: config
        configMap: {name: grafana}
---
apiVersion: v1
kind: Service
metadata: {name: grafana, namespace: %[1]s}
spec:
  selector: {app: grafana}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9090, targetPort: 3000}
`, ns),
		path.Join(dir, "lease.yaml"): fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: grafana-leader, namespace: %s}
spec:
  holderIdentity: grafana-0
  leaseDurationSeconds: 15
  acquireTime: "2026-12-01T18:00:00.000000+01:00"
`, ns),
	}
}
