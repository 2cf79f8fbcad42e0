package controller

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

func unstructuredBool(obj map[string]any, fields ...string) (bool, bool, error) {
	return unstructured.NestedBool(obj, fields...)
}
