package planner

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// builtinScheme is client-go's scheme of the built-in kinds, built for
// the planner alone. Other packages add kinds to client-go's global
// scheme.Scheme when they are initialized (Helm's chart package adds
// apiextensions.k8s.io's), and the planner must not take those for
// built-in kinds: it has no built-in schema for them.
var builtinScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	return s
}()
