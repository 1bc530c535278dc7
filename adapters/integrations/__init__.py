"""The verified cache inside the caching layers users already run.

* :mod:`.gptcache_evaluation` - :class:`~.gptcache_evaluation.VerifiedEvaluation`,
  a GPTCache ``SimilarityEvaluation``: an existing GPTCache pipeline gets the
  verifier's veto by passing ``similarity_evaluation=VerifiedEvaluation()``
  (needs ``gptcache``, from the ``adapters`` extra).
* :mod:`.langchain_cache` - :class:`~.langchain_cache.VerifiedLLMCache`, a
  ``langchain-core`` ``BaseCache``: ``set_llm_cache(VerifiedLLMCache())`` puts the
  verified cache in front of any LangChain LLM or chat model (needs
  ``langchain-core``, from the ``integrations`` extra).

Importing this package imports neither GPTCache nor LangChain: each module
imports its own framework, so import the module you use.
"""
