package main

import (
	"errors"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

// openConfig loads the config, connects to the cluster and returns a
// Runner with the selected apps (one app, or all in config order).
func openConfig(path, appName string, kube *kubeFlags, cacheDir string, concurrency int) (*reconcile.Runner, []config.App, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kube.connect()
	if err != nil {
		return nil, nil, err
	}
	runner, err := reconcile.New(cfg, reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config}, reconcile.Options{CacheDir: cacheDir, Concurrency: concurrency})
	if err != nil {
		return nil, nil, err
	}
	if appName != "" {
		app, err := runner.App(appName)
		if err != nil {
			return nil, nil, err
		}
		return runner, []config.App{app}, nil
	}
	if len(cfg.Apps) == 0 {
		return nil, nil, reconcile.ErrNoApps
	}
	return runner, cfg.Apps, nil
}

// exitCodeOf returns the exit code an error carries (1 when none).
func exitCodeOf(err error) int {
	var ce *exitCodeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}

// loadConfigForRun loads and validates the config the daemon will run.
func loadConfigForRun(path string) (*config.Config, error) { return config.Load(path) }
