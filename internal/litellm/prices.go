package litellm

import (
	"math"
	"strconv"
)

// priceKeys are LiteLLM's cost settings that Convert maps into price: the per-token costs
// (USD per token x 10^6: the base costs, the cache costs, and their _above_200k_tokens
// long-context tier) and output_cost_per_image (price.image, USD per image as it is).
var priceKeys = []string{
	"input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost",
	"cache_creation_input_token_cost_above_1hr",
	"input_cost_per_token_above_200k_tokens", "output_cost_per_token_above_200k_tokens",
	"cache_read_input_token_cost_above_200k_tokens", "cache_creation_input_token_cost_above_200k_tokens",
	imagePriceKey,
}

// imagePriceKey is LiteLLM's USD per image generated: price.image (docs/routing.md "Images").
const imagePriceKey = "output_cost_per_image"

// pixelPriceKeys are LiteLLM's per-pixel image costs (its dall-e entries), which no Switchyard
// price has: noted, with price.image as what to set instead.
var pixelPriceKeys = map[string]bool{"input_cost_per_pixel": true, "output_cost_per_pixel": true}

// priceKeyCase is k when k is one of priceKeys (a switch case that matches it), else a value
// no setting has.
func priceKeyCase(k string) string {
	for _, p := range priceKeys {
		if k == p {
			return k
		}
	}
	return "\x00not a price key"
}

// price reads input_cost_per_token / output_cost_per_token (USD per token) from litellm_params
// or model_info, as USD per million tokens.
//
// The cache costs map to cache_read (cache_read_input_token_cost), cache_write
// (cache_creation_input_token_cost) and cache_write_1h (cache_creation_input_token_cost_above_1hr),
// and the _above_200k_tokens costs to a tier above 200,000 input tokens; a cost LiteLLM leaves
// out stays out (the price's defaults apply: docs/pricing.md). output_cost_per_image is
// price.image. A cost set in both places is litellm_params' (costNotes notes the other).
func price(lp, info map[string]any) *outPrice {
	in, okIn := num(first2(lp, info, "input_cost_per_token"))
	out, okOut := num(first2(lp, info, "output_cost_per_token"))
	img, okImg := num(first2(lp, info, imagePriceKey))
	if !okIn && !okOut && !okImg {
		return nil
	}
	if !okImg || img < 0 {
		img = 0
	}
	opt := func(key string) *float64 {
		v, ok := num(first2(lp, info, key))
		if !ok {
			return nil
		}
		m := perMillion(v)
		return &m
	}
	p := &outPrice{Input: perMillion(in), Output: perMillion(out), Image: img, CacheRead: opt("cache_read_input_token_cost"),
		CacheWrite: opt("cache_creation_input_token_cost"), CacheWrite1h: opt("cache_creation_input_token_cost_above_1hr")}
	t := outTier{AboveInputTokens: 200_000, Input: opt("input_cost_per_token_above_200k_tokens"),
		Output: opt("output_cost_per_token_above_200k_tokens"), CacheRead: opt("cache_read_input_token_cost_above_200k_tokens"),
		CacheWrite: opt("cache_creation_input_token_cost_above_200k_tokens")}
	if t.Input != nil || t.Output != nil || t.CacheRead != nil || t.CacheWrite != nil {
		p.Tiers = []outTier{t}
	}
	return p
}

func perMillion(perToken float64) float64 {
	if perToken < 0 || math.IsNaN(perToken) || math.IsInf(perToken, 0) {
		return 0
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(perToken*1e6, 'g', 10, 64), 64) // 2.5e-06 -> 2.5, not 2.4999999999999996
	return v
}

// costNotes notes each cost of model_info that litellm_params sets too: the route's price
// takes litellm_params' (price), so model_info's is not applied. path is the entry's.
func (c *converter) costNotes(path string, lp, info map[string]any) {
	for _, k := range priceKeys {
		_, inLP := lp[k]
		if _, inInfo := info[k]; inLP && inInfo {
			c.note(path+".model_info."+k, "not applied: %s.litellm_params.%s sets the route's price too, and wins", path, k)
		}
	}
}
