package metrics

// BoardQueries returns every PromQL query ("expr") of a decoded Grafana dashboard JSON,
// panels inside rows included, so the board shipped in deploy/grafana can be checked against
// the metrics adc exports and evaluated on a real Prometheus.
func BoardQueries(board any) []string {
	var out []string
	switch x := board.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && k == "expr" {
				out = append(out, s)
			} else {
				out = append(out, BoardQueries(val)...)
			}
		}
	case []any:
		for _, val := range x {
			out = append(out, BoardQueries(val)...)
		}
	}
	return out
}
