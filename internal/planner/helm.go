package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// ChartFile is the file whose presence makes an app directory a Helm
// chart.
const ChartFile = "Chart.yaml"

// HelmOptions say how Render renders a Helm chart (a Tree whose Dir holds
// Chart.yaml). They are ignored for other directories. See docs/helm.md.
type HelmOptions struct {
	// ReleaseName is .Release.Name; required for a chart.
	ReleaseName string
	// Namespace is .Release.Namespace.
	Namespace string
	// Values are merged over the values files; they win.
	Values map[string]any
	// ValuesFiles are slash-separated paths relative to ValuesRoot,
	// merged in order over the chart's values.yaml (helm's -f).
	ValuesFiles []string
	// ValuesRoot is the directory ValuesFiles are read from, confined to
	// it as Tree.Root confines a build; empty: Tree.Root. A Helm
	// repository's chart reads them from its package (the chart's
	// directory), an app with helm.valuesSource from that source's tree.
	ValuesRoot string
	// ValuesFrom names ValuesRoot in errors ("chart podinfo", "source
	// values"); empty: nothing is added to the file's path.
	ValuesFrom string
	// ExcludeCRDs leaves out the chart's crds/ directories (the zero
	// value renders them, helm's default).
	ExcludeCRDs bool
	// Capabilities are .Capabilities; nil means DefaultHelmCapabilities.
	// Either way, unless ExcludeCRDs, the APIs the crds/ of the chart and
	// its enabled subcharts serve are added for the render (helm install
	// creates crds/ before it reads the capabilities); Capabilities
	// itself is not changed.
	Capabilities *HelmCapabilities
}

// HelmCapabilities are what a chart sees as .Capabilities: the target
// cluster's Kubernetes version and API versions. ClusterCapabilities
// (package reconcile) reads them from a cluster's discovery.
type HelmCapabilities struct {
	// KubeVersion is the server's version ("v1.37.2").
	KubeVersion string
	// APIVersions are "group/version" and "group/version/Kind" entries
	// ("v1", "apps/v1", "apps/v1/Deployment"), as helm lists them.
	APIVersions []string
}

// DefaultHelmCapabilities are the capabilities of a render without a
// cluster (syncd render): Helm's defaults for the client-go syncd is
// built with (Kubernetes v1.<client-go minor>.0 and the API versions
// client-go's scheme knows, with apiextensions.k8s.io), as helm template
// does without --kube-version and --api-versions.
func DefaultHelmCapabilities() HelmCapabilities {
	d := common.DefaultCapabilities
	return HelmCapabilities{KubeVersion: d.KubeVersion.Version, APIVersions: append([]string(nil), d.APIVersions...)}
}

// IsChart reports whether dir holds Chart.yaml: Render renders it with Helm.
func IsChart(dir string) bool {
	info, err := os.Stat(filepath.Join(dir, ChartFile))
	return err == nil && !info.IsDir()
}

// renderChart renders the chart in the directory rel of t.Root with
// Helm's template engine: client-side, no cluster access (lookup returns
// nothing), no DNS, no post-renderer, no hooks run.
func renderChart(ctx context.Context, t Tree, rel string, opts HelmOptions) ([]Manifest, error) {
	where := path.Join(rel, ChartFile)
	if opts.ReleaseName == "" {
		return nil, ManifestErrors{{File: where, Err: errors.New("no release name: set apps[].helm.releaseName")}}
	}
	fsys, err := openRepoFS(t.Root, buildDeadline(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: read chart: %w", t.Root, err)
	}
	defer fsys.Close()
	ch, err := loadChart(fsys, rel)
	if err != nil {
		return nil, err
	}
	vals, err := valuesOf(ctx, fsys, opts)
	if err != nil {
		return nil, err
	}
	rendered, err := renderTemplates(ctx, chartRender{chart: ch, rel: rel, values: vals, opts: opts})
	var missing vendorErrors
	if errors.As(err, &missing) {
		return nil, missing.manifestErrors()
	}
	if err != nil {
		return nil, ManifestErrors{{File: where, Err: fmt.Errorf("chart %s: %s", ch.Name(), maskValues(helmMessage(err, ch.Name(), rel), vals))}}
	}
	return chartManifests(rel, rendered)
}

// chartRender is one render of a loaded chart: the chart, its directory
// in the repository, the values (files and inline, merged) and the
// options.
type chartRender struct {
	chart  *chart.Chart
	rel    string
	values map[string]any
	opts   HelmOptions
}

// chartOutput is what one render of a chart gives: the engine's output
// by template name, and the crds/ documents (the chart's and its enabled
// subcharts', unless ExcludeCRDs), decoded once for both
// .Capabilities and the manifests.
type chartOutput struct {
	templates map[string]string
	crds      chartCRDs
}

// renderTemplates runs Helm's engine over the chart: the chart's
// kubeVersion, dependencies' conditions, tags and import-values, the
// values schema, then every template. It returns at the build deadline;
// the engine cannot be interrupted, so its goroutine is abandoned then.
// syncd renders through package renderproc, in a child process that is
// killed at its deadline, which ends that goroutine too.
func renderTemplates(ctx context.Context, r chartRender) (chartOutput, error) {
	caps, err := r.opts.capabilities()
	if err != nil {
		return chartOutput{}, err
	}
	if err := checkKubeVersion(r.chart, caps); err != nil {
		return chartOutput{}, err
	}
	type result struct {
		out chartOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := r.run(caps)
		done <- result{out, err}
	}()
	timer := time.After(time.Until(buildDeadline(ctx)))
	select {
	case res := <-done:
		return res.out, res.err
	case <-timer:
		return chartOutput{}, fmt.Errorf("the chart did not render in time (the limit is %s)", KustomizeTimeout)
	}
}

// checkKubeVersion refuses a chart whose Chart.yaml kubeVersion range
// leaves out the Kubernetes version it is rendered for, as helm install
// and helm template do.
func checkKubeVersion(ch *chart.Chart, caps *common.Capabilities) error {
	want := ch.Metadata.KubeVersion
	if want == "" || chartutil.IsCompatibleRange(want, caps.KubeVersion.String()) {
		return nil
	}
	return fmt.Errorf("kubeVersion %q leaves out Kubernetes %s, the version the chart is rendered for: use a chart version made for this cluster (helm install refuses it too)", want, caps.KubeVersion.Version)
}

// run is one render by Helm's engine, a panic included in its error.
func (r chartRender) run(caps *common.Capabilities) (out chartOutput, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("helm failed: %s", scrubHelm(fmt.Sprint(rec)))
		}
	}()
	ch := r.chart
	if err := chartutil.ProcessDependencies(ch, r.values); err != nil {
		if missing := checkVendored(ch, r.rel); len(missing) > 0 {
			return chartOutput{}, missing
		}
		return chartOutput{}, helmError("chart dependencies", err)
	}
	if missing := checkVendored(ch, r.rel); len(missing) > 0 {
		return chartOutput{}, missing
	}
	if !r.opts.ExcludeCRDs {
		out.crds = decodeChartCRDs(ch, r.rel)
		caps = withCRDAPIs(caps, out.crds.manifests)
	}
	release := common.ReleaseOptions{Name: r.opts.ReleaseName, Namespace: r.opts.Namespace, Revision: 1, IsInstall: true}
	// The schemas are checked by validateSchemas, which loads no
	// external $ref and names the failing values (helm's check does both).
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, r.values, release, caps, true)
	if err != nil {
		return chartOutput{}, helmError("values", err)
	}
	if vals, ok := top["Values"].(common.Values); ok {
		if err := validateSchemas(ch, vals, r.rel); err != nil {
			return chartOutput{}, fmt.Errorf("values: %w", err)
		}
	}
	// The zero Engine has no client (lookup returns an empty map), no
	// DNS (getHostByName returns ""), and is neither strict nor in lint
	// mode, as helm template is.
	out.templates, err = engine.Engine{}.Render(ch, top)
	if err != nil {
		return chartOutput{}, helmError("template", err)
	}
	return out, nil
}

// capabilities returns Helm's .Capabilities for opts.
func (o HelmOptions) capabilities() (*common.Capabilities, error) {
	c := DefaultHelmCapabilities()
	if o.Capabilities != nil {
		c = *o.Capabilities
	}
	kv, err := common.ParseKubeVersion(c.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("capabilities: Kubernetes version %q: %w", c.KubeVersion, err)
	}
	return &common.Capabilities{
		KubeVersion: *kv,
		APIVersions: common.VersionSet(c.APIVersions),
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}, nil
}

// chartManifests turns a render's crds/ documents and the engine's
// output into Manifests named by their repository paths, hooks marked
// (see hookOf), test and delete hooks left out. NOTES.txt and empty
// documents are skipped.
func chartManifests(rel string, rendered chartOutput) ([]Manifest, error) {
	var out []Manifest
	errs := slices.Clone(rendered.crds.errs)
	add := func(ms []Manifest) {
		for _, m := range ms {
			hook, keep := hookOf(m.Object)
			if keep {
				m.Hook = hook
				out = append(out, m)
			}
		}
	}
	add(rendered.crds.manifests)
	for _, file := range slices.Sorted(maps.Keys(rendered.templates)) {
		if path.Base(file) == "NOTES.txt" {
			continue
		}
		ms, fileErrs := decodeStream(strings.NewReader(rendered.templates[file]), chartFilePath(rel, file))
		errs = append(errs, fileErrs...)
		add(ms)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// chartFilePath turns a path Helm names a template by ("mychart/templates/
// a.yaml", "mychart/charts/sub/templates/b.yaml": the chart's name
// first) into one relative to the repository root.
func chartFilePath(rel, file string) string {
	_, inChart, _ := strings.Cut(file, "/")
	return path.Join(rel, inChart)
}

// helmMessage is err's text with Helm's template names turned into
// repository paths; a schema check's message names its files by their
// repository paths already and is kept as it is.
func helmMessage(err error, chartName, rel string) string {
	var schemaErr *schemaError
	if errors.As(err, &schemaErr) {
		return err.Error()
	}
	return inRepo(err.Error(), chartName, rel)
}

// inRepo rewrites the template names in a Helm message ("web/templates/
// a.yaml:4:18") into repository paths ("deploy/web/templates/a.yaml:4:18").
func inRepo(msg, chartName, rel string) string {
	prefix := rel + "/"
	if rel == "." {
		prefix = ""
	}
	for _, dir := range []string{"templates/", "charts/"} {
		msg = strings.ReplaceAll(msg, chartName+"/"+dir, prefix+dir)
	}
	return msg
}

// renderHelm renders a chart directory, refusing one that also holds a
// kustomization: which of the two is meant is not for syncd to guess.
func renderHelm(ctx context.Context, t Tree, rel string) ([]Manifest, error) {
	if k := kustomizationFile(t.Dir); k != "" {
		return nil, ManifestErrors{{File: path.Join(rel, k), Err: fmt.Errorf("the directory holds both %s and %s: an app renders either a Helm chart or a kustomization; move one of them", ChartFile, k)}}
	}
	return renderChart(ctx, t, rel, t.Helm)
}
