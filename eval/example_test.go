package eval_test

import (
	"fmt"

	"github.com/quarry-rag/quarry/eval"
)

func ExampleEvaluate() {
	qrels := eval.Qrels{"q1": {"a": 2, "c": 1}}
	run := eval.Run{"q1": eval.Rank([]eval.Scored{{ID: "b", Score: 3}, {ID: "a", Score: 2}, {ID: "c", Score: 2}})}
	res := eval.Evaluate(qrels, run, eval.NDCG(10), eval.Recall(2), eval.MRR(10), eval.MAP(0))
	for _, m := range res.Metrics {
		fmt.Printf("%s %.4f\n", m, res.Mean[m.String()])
	}
	// Output:
	// ndcg@10 0.6697
	// recall@2 0.5000
	// mrr@10 0.5000
	// map 0.5833
}
