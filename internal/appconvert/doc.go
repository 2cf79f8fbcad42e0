// Package appconvert turns the sources and apps of a syncd config file
// into GitSource and App objects (syncd convert, the migration from the
// file to App objects).
//
// An app's fields that the file and the App share are one type,
// config.AppSpec, copied as one; the file's own fields are mapped to the
// App's (namespace to targetNamespace, source to sourceRef, files to
// secretRefs) or refused with the reason (installsSyncd, substituteFrom
// files, sources other than Git). Each App is translated back as the
// controller does (controller.Translate) and compared with the file app,
// so a field lost or changed on the way is an error, not a silent
// difference.
//
// It reads no file and writes no Secret: credentials become secretRef
// placeholders and a kubectl command that creates each Secret from the
// files the config names, which the user runs. It does not check that
// the objects would be admitted by a cluster (the CRD's rules); the
// round trip runs the file config's validation only.
package appconvert
