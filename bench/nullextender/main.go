// nullextender: an extender that decides nothing, for bench/e2e_throughput.py --null-extender.
//
// It speaks the extender protocol in NodeNames mode (nodeCacheCapable: true): /filter passes every
// node it is sent, /prioritize gives each a score of 0, /bind creates the pods/binding subresource
// on the API server, as berth's /bind does. What a round with it costs beyond kube-scheduler alone
// is roughly the price of the protocol itself (two HTTP calls and a delegated bind per pod) on the
// machine: an extender that decides something pays that and its decisions.
//
// Usage: nullextender -listen 127.0.0.1:PORT -server https://127.0.0.1:6443 -ca CA -cert CERT -key KEY
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
)

type extenderArgs struct {
	NodeNames *[]string
}

type filterResult struct {
	NodeNames                  *[]string
	FailedNodes                map[string]string
	FailedAndUnresolvableNodes map[string]string
	Error                      string
}

type hostPriority struct {
	Host  string
	Score int64
}

type bindingArgs struct {
	PodName      string
	PodNamespace string
	PodUID       string
	Node         string
}

type bindingResult struct {
	Error string
}

func decode(w http.ResponseWriter, r *http.Request, into any) bool {
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func answer(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(body); err != nil {
		log.Printf("writing an answer: %v", err)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8888", "address to serve on")
	server := flag.String("server", "", "API server URL (for /bind)")
	caFile := flag.String("ca", "", "API server CA")
	certFile := flag.String("cert", "", "client certificate")
	keyFile := flag.String("key", "", "client key")
	flag.Parse()

	pool := x509.NewCertPool()
	ca, err := os.ReadFile(*caFile)
	if err != nil || !pool.AppendCertsFromPEM(ca) {
		log.Fatalf("reading the CA %s: %v", *caFile, err)
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("reading the client certificate: %v", err)
	}
	api := &http.Client{Transport: &http.Transport{
		// HTTP/2 to the API server, as client-go (and so kube-scheduler's own binder) uses.
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		ForceAttemptHTTP2: true,
	}}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var args extenderArgs
		if decode(w, r, &args) {
			answer(w, filterResult{NodeNames: args.NodeNames, FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}})
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args extenderArgs
		if !decode(w, r, &args) {
			return
		}
		scores := []hostPriority{}
		if args.NodeNames != nil {
			for _, name := range *args.NodeNames {
				scores = append(scores, hostPriority{Host: name})
			}
		}
		answer(w, scores)
	})
	mux.HandleFunc("POST /bind", func(w http.ResponseWriter, r *http.Request) {
		var args bindingArgs
		if !decode(w, r, &args) {
			return
		}
		binding, _ := json.Marshal(map[string]any{
			"apiVersion": "v1",
			"kind":       "Binding",
			"metadata":   map[string]any{"name": args.PodName, "namespace": args.PodNamespace, "uid": args.PodUID},
			"target":     map[string]any{"apiVersion": "v1", "kind": "Node", "name": args.Node},
		})
		path := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/binding", *server, url.PathEscape(args.PodNamespace), url.PathEscape(args.PodName))
		resp, err := api.Post(path, "application/json", bytes.NewReader(binding))
		if err != nil {
			answer(w, bindingResult{Error: err.Error()})
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			answer(w, bindingResult{Error: fmt.Sprintf("binding: HTTP %d: %s", resp.StatusCode, body)})
			return
		}
		answer(w, bindingResult{})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	log.Fatal(http.ListenAndServe(*listen, mux))
}
