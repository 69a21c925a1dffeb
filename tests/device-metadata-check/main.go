// device-metadata-check judges device metadata files by k8s.io/dynamic-resource-allocation's own
// code: each file named on the command line is decoded with devicemetadata.DecodeMetadataFromStream
// (as a consumer in the container reads it), validated by the declarative validation of the
// version it holds, every object of the stream decoded on its own too, and then encoded again by
// the library's own serializer for the versions the stream holds, in its order, as
// kubeletplugin/metadata.go writes a file (encodeMetadataStream): the result must be the file,
// byte for byte. So a file passes only if the Go helper would have written exactly it.
//
// Prints one JSON report per file (path, versions, the decoded object) on stdout; exits 1 naming
// the first difference otherwise.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/api/metadata/install"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
)

type report struct {
	Path     string                   `json:"path"`
	Versions []string                 `json:"versions"`
	Decoded  *metadata.DeviceMetadata `json:"decoded"`
}

// The first object of `data` a consumer can read, validated by its version's declarative
// validation, and that version.
func decodeValidated(data []byte) (*metadata.DeviceMetadata, schema.GroupVersionKind, error) {
	var decoded metadata.DeviceMetadata
	var validation error
	var gvk schema.GroupVersionKind
	if err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(data)), &decoded,
		devicemetadata.DecodeMetadataWithValidationResult(&validation),
		devicemetadata.DecodeMetadataStoreGVKResult(&gvk)); err != nil {
		return nil, gvk, fmt.Errorf("decode: %w", err)
	}
	if validation != nil {
		return nil, gvk, fmt.Errorf("validation of %s: %w", gvk.GroupVersion(), validation)
	}
	return &decoded, gvk, nil
}

func check(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := install.NewScheme()
	codecs := runtimeserializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no JSON serializer")
	}

	// As a consumer reads it: the first version it knows, validated.
	first, _, err := decodeValidated(data)
	if err != nil {
		return nil, err
	}

	// Every object of the stream: its version, and the same object as the first.
	var versions []schema.GroupVersion
	decoder := json.NewDecoder(bytes.NewReader(data))
	for decoder.More() {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			return nil, fmt.Errorf("object %d: %w", len(versions), err)
		}
		one, oneGVK, err := decodeValidated(raw)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", len(versions), err)
		}
		a, _ := json.Marshal(one)
		b, _ := json.Marshal(first)
		if !bytes.Equal(a, b) {
			return nil, fmt.Errorf("object %d (%s) says another thing than the first:\n%s\n%s", len(versions), oneGVK.GroupVersion(), a, b)
		}
		versions = append(versions, oneGVK.GroupVersion())
	}

	// As the library writes it: each version's pretty JSON and a newline.
	var written bytes.Buffer
	for _, gv := range versions {
		encoded, err := runtime.Encode(codecs.EncoderForVersion(info.PrettySerializer, gv), first)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", gv, err)
		}
		written.Write(encoded)
		written.WriteByte('\n')
	}
	if !bytes.Equal(written.Bytes(), data) {
		return nil, fmt.Errorf("the library writes another text for the same object:\n--- library\n%s--- file\n%s", written.Bytes(), data)
	}

	r := &report{Path: path, Decoded: first}
	for _, gv := range versions {
		r.Versions = append(r.Versions, gv.String())
	}
	return r, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: device-metadata-check FILE...")
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	for _, path := range os.Args[1:] {
		r, err := check(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		if err := out.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
