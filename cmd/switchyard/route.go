package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/switchyard-gw/switchyard/internal/catalog"
	"github.com/switchyard-gw/switchyard/internal/dialect"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/server"
)

// cmdRoute is `switchyard route --config FILE --model ID [--key NAME] [--json]`: the plan of a
// minimal chat request for the model (R-ORDER-8), built by the same code as POST /v1/route, on
// a gateway that has served nothing yet (every circuit closed, no measurements).
func cmdRoute(args []string, out io.Writer) error {
	fs := newFlags("route", "route --model ID [--config FILE] [--key NAME] [--json]",
		"Prints the plan of a minimal chat request for the model on a gateway that has served nothing\nyet: candidates in order with band, score and weight, and the routes dropped with reasons.")
	file := fs.String("config", "", "configuration file (default ./switchyard.yaml if present, else the built-in catalog)")
	model := fs.String("model", "", "model id as a caller sends it (suffixes allowed)")
	key := fs.String("key", "", "name of a configured key whose settings apply")
	asJSON := fs.Bool("json", false, "print the plan as JSON (the POST /v1/route answer)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *model == "" {
		fmt.Fprintln(cliErr, "switchyard route: --model is required")
		fs.Usage()
		return errUsage
	}
	cfg, name, _, err := loadConfig(*file)
	if err != nil {
		return err
	}
	cat, err := catalog.New(cfg)
	if err != nil {
		return err
	}
	body := dialect.AppendJSONString([]byte(`{"model":`), *model)
	body = append(body, `,"messages":[{"role":"user","content":""}]}`...)
	p, err := server.Explain(cfg, cat, *key, body)
	if err != nil {
		return cliError(err, name, cat)
	}
	return printPlan(out, p, *asJSON)
}

// printPlan writes p as indented JSON or as a table: a header of model (and dedicated
// endpoint), strategy and session key, the candidates in order with band, score, priority and
// weight (an endpoint's reserved deployments marked "(reserved)"), then the dropped routes.
func printPlan(out io.Writer, p *server.RoutePlan, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Fprintf(out, "model %s -> %s", p.Model, p.ResolvedModel)
	if p.Endpoint != "" {
		fmt.Fprintf(out, " (dedicated endpoint %s)", p.Endpoint)
	}
	fmt.Fprintf(out, ", strategy %s", p.Strategy)
	if p.DegradedFrom != "" {
		fmt.Fprintf(out, " (degraded from %s)", p.DegradedFrom)
	}
	if p.SessionKey != "" {
		fmt.Fprintf(out, ", session %s", p.SessionKey)
	}
	if p.AttemptLimit > 0 {
		fmt.Fprintf(out, ", attempt limit %d", p.AttemptLimit)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	regions := p.Failover != nil // a REGION column only when some candidate has a region
	if regions {
		fmt.Fprintln(tw, "#\tDEPLOYMENT\tPROVIDER\tPLATFORM\tMODEL\tUPSTREAM\tREGION\tBAND\tSCORE\tPRIORITY\tWEIGHT\tPRICE IN/OUT/CACHE-READ/CACHE-WRITE\tWINDOW")
	} else {
		fmt.Fprintln(tw, "#\tDEPLOYMENT\tPROVIDER\tPLATFORM\tMODEL\tUPSTREAM\tBAND\tSCORE\tPRIORITY\tWEIGHT\tPRICE IN/OUT/CACHE-READ/CACHE-WRITE\tWINDOW")
	}
	for i, c := range p.Candidates {
		score := "-"
		if c.Score != nil {
			score = strconv.FormatFloat(*c.Score, 'g', 6, 64)
		}
		dep := c.Deployment
		if c.Reserved {
			dep += " (reserved)"
		}
		if regions {
			region := c.Region
			if region == "" {
				region = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%g\t%s\t%s\n", i+1, dep, c.Provider, c.Platform, c.Model, c.UpstreamModel, region, c.Band, score, c.Priority, c.Weight, priceCell(c), windowCell(c))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%g\t%s\t%s\n", i+1, dep, c.Provider, c.Platform, c.Model, c.UpstreamModel, c.Band, score, c.Priority, c.Weight, priceCell(c), windowCell(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rf := p.Refusal; rf != nil {
		fmt.Fprintf(out, "refused: a request would get %d %s: %s\n", rf.Status, rf.ErrorType, rf.Message)
	}
	if f := p.Failover; f != nil {
		fmt.Fprintf(out, "failover: %s -> same region first; %s -> other region first\n",
			classList(f.SameRegionFirst), classList(f.OtherRegionFirst))
	}
	if len(p.Dropped) > 0 {
		fmt.Fprintln(out, "dropped:")
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, d := range p.Dropped {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Deployment, d.Model, d.Reason)
		}
		return tw.Flush()
	}
	return nil
}

// priceCell is a candidate's billed price, USD per million tokens, and its source:
// "3/15/0.3/3.75 (config)", or "- (none)" when unpriced.
func priceCell(c server.RouteCandidate) string {
	if c.Pricing == nil {
		return "- (" + c.PriceSource + ")"
	}
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	p := c.Pricing
	return g(p.Input) + "/" + g(p.Output) + "/" + g(p.CacheRead) + "/" + g(p.CacheWrite) + " (" + c.PriceSource + ")"
}

// windowCell is a candidate's context window and its source: "200000 (catalog)", or "-".
func windowCell(c server.RouteCandidate) string {
	if c.ContextWindow == 0 {
		return "-"
	}
	return strconv.Itoa(c.ContextWindow) + " (" + c.ContextWindowSource + ")"
}

// classList joins failure classes with ", ".
func classList(cs []failure.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// cliError rewords a request error for the command line: an unknown model names the models
// the configuration has and where to add one, instead of the HTTP surface's hint.
func cliError(err error, name string, cat *catalog.Catalog) error {
	var fe *failure.Error
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Class == failure.ModelUnavailable && strings.Contains(fe.Msg, " is not served here;") {
		ids := make([]string, 0, len(cat.Models))
		for _, m := range cat.Models {
			ids = append(ids, m.ID)
		}
		msg, _, _ := strings.Cut(fe.Msg, " is not served here;")
		return fmt.Errorf("%s is not in %s; its models are: %s (add one under models: and route it from a deployment)",
			msg, name, strings.Join(ids, ", "))
	}
	msg := fe.Msg
	if i := strings.Index(msg, "; GET /v1/"); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Errorf("%s: %s", fe.Class, msg)
}
