package plan

import "math"

// Blend weighs input and output prices for the price strategy (R-ORDER-2): score =
// Input x input price + Output x output price, in USD per million tokens. Zero means 3:1.
type Blend struct{ Input, Output float64 }

// priceScores sets each candidate's blended price; unpriced routes (billed at provider-reported
// cost) have none and go after every priced one, in one band of their own.
func priceScores(cs []Candidate, b Blend) {
	bi, bo := b.Input, b.Output
	if bi == 0 && bo == 0 {
		bi, bo = 3, 1
	}
	for i := range cs {
		c := &cs[i]
		if pr := c.Route.Price; pr != nil {
			c.Score = bi*pr.InputPerMTokUSD + bo*pr.OutputPerMTokUSD
			c.metric, c.key = c.Score, c.Score
		} else {
			c.Score, c.nokey = math.NaN(), true
		}
	}
}
