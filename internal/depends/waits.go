package depends

// Waits returns what an app whose dependsOn is deps waits for: for each
// dependency, in dependsOn order, what notReady says of it when it is not
// ready (ok true). None when every dependency is ready. notReady is the
// driver's rule (see the package comment).
func Waits[W any](deps []string, notReady func(dep string) (wait W, ok bool)) []W {
	var waits []W
	for _, dep := range deps {
		if w, ok := notReady(dep); ok {
			waits = append(waits, w)
		}
	}
	return waits
}
