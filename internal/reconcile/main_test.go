package reconcile_test

import (
	"testing"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{ControllerManager: true}, &env) }

// cluster is the test control plane's reconcile.Cluster.
func cluster(t *testing.T) reconcile.Cluster {
	t.Helper()
	return reconciletest.Cluster(t, env.Config)
}
