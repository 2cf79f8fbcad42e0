package appconvert

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// alertSecretSuffix ends the name of the Secret a converted
// AlertProvider names.
const alertSecretSuffix = "-alert"

// alert converts one alerts[] entry into an AlertProvider and an Alert
// of the same name, added to the Conversion. A config alert hears every
// app of the file; the Alert selects every App of the namespace they are
// all converted into, which is the same set. Its urlFile (and
// hmacKeyFile) become the keys of one Secret, which convert names but
// never reads.
func (c *Conversion) alert(a config.Alert, ns string) {
	meta := metav1.ObjectMeta{Name: a.Name, Namespace: ns}
	secret := a.Name + alertSecretSuffix
	provider := &v1alpha1.AlertProvider{
		TypeMeta:   typeMeta(v1alpha1.KindAlertProvider),
		ObjectMeta: meta,
		Spec:       v1alpha1.AlertProviderSpec{Type: a.Type, SecretRef: v1alpha1.LocalObjectReference{Name: secret}},
	}
	keys := []secretKey{{key: v1alpha1.SecretKeyAddress, file: a.URLFile}}
	if a.HMACKeyFile != "" {
		keys = append(keys, secretKey{key: v1alpha1.SecretKeyHMACKey, file: a.HMACKeyFile})
	}
	c.secretNote(v1alpha1.KindAlertProvider, meta, secret, keys)
	c.AlertProviders = append(c.AlertProviders, provider)
	c.Alerts = append(c.Alerts, &v1alpha1.Alert{
		TypeMeta:   typeMeta(v1alpha1.KindAlert),
		ObjectMeta: meta,
		Spec: v1alpha1.AlertSpec{
			ProviderRef:  v1alpha1.ProviderReference{Name: a.Name},
			EventSources: []v1alpha1.AppSelector{{Kind: v1alpha1.KindApp, Name: "*"}},
			Events:       a.Events,
		},
	})
}
