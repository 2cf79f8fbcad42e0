package syncdrun

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Objects returns n objects for namespace ns: 70 % ConfigMaps, 20 %
// Deployments, 10 % Services, interleaved so that any prefix has the same
// mix.
func Objects(ns string, n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, n)
	for i := range n {
		name := fmt.Sprintf("obj-%05d", i)
		var o map[string]any
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5, 6:
			o = map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"data":     map[string]any{"index": fmt.Sprint(i), "payload": fmt.Sprintf("value-%d-abcdefghijklmnopqrstuvwxyz", i)},
			}
		case 7, 8:
			o = map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"replicas": int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": name}},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "app", "image": "registry.example/app:1.0",
							"ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}},
						}}},
					},
				},
			}
		default:
			o = map[string]any{
				"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"selector": map[string]any{"app": name},
					"ports":    []any{map[string]any{"port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}},
				},
			}
		}
		out = append(out, &unstructured.Unstructured{Object: o})
	}
	return out
}

// ConfigMaps returns n small ConfigMaps for namespace ns, named as
// Objects names them.
func ConfigMaps(ns string, n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, n)
	for i := range n {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("obj-%05d", i), "namespace": ns},
			"data":     map[string]any{"index": fmt.Sprint(i), "payload": fmt.Sprintf("value-%d-abcdefghijklmnopqrstuvwxyz", i)},
		}})
	}
	return out
}
