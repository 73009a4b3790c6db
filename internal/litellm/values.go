package litellm

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// envRef turns LiteLLM's os.environ/VAR into ${VAR}; other values are returned as they are.
func envRef(s string) string {
	if v, ok := strings.CutPrefix(s, "os.environ/"); ok {
		return "${" + v + "}"
	}
	return s
}

func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func first2(a, b map[string]any, key string) any {
	if v, ok := a[key]; ok {
		return v
	}
	return b[key]
}

func seconds(n float64) string {
	return strconv.FormatFloat(n, 'f', -1, 64) + "s"
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case int, int64, float64, bool:
		return fmt.Sprint(x)
	}
	return ""
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
