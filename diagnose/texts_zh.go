package diagnose

import m "github.com/casebook/casebook/metrics"

// The Simplified Chinese texts, keyed like the English tables in
// texts.go (cause ids, metric ids, remark keys, action ids). The words
// follow docs/glossary-zh.md; metric and knob names engineers type
// (TTFT, TPOT, max_num_seqs) stay in Latin letters.

// causeText is a cause's title, explanation and metric signature.
type causeText struct{ Title, What, Signature string }

var zhCauses = map[string]causeText{
	m.CauseKVCacheEviction:       {"KV Cache 驱逐风暴", "上下文过于分散或 KV Cache 太小，序列被驱逐后重新计算。", "前缀命中率下降，KV 使用率接近 1，抢占增加，TTFT 远大于 TPOT"},
	m.CauseQueueBacklog:          {"队列积压", "到达速率超过服务能力，引擎队列不断堆积。", "队列深度和排队时间上升，吞吐停在上限，SM 繁忙"},
	m.CauseGPUUnderutilized:      {"GPU 利用率不足", "批次过小，GPU 算力被浪费。", "请求持续流入而 SM 利用率低"},
	m.CauseSpecDecodeDegradation: {"投机采样退化", "草稿模型与目标模型发生偏离，大多数草稿 Token 被拒绝。", "拒绝率上升，TPOT 上升"},
	m.CauseMemoryBandwidthBound:  {"显存带宽瓶颈", "HBM 带宽饱和或下降，每个解码步都变慢。", "DRAM 活跃度高或带宽下降，TPOT 上升，随后排队增加，吞吐下降"},
	m.CauseLongPromptPrefill:     {"长 Prompt 预填充激增", "Prompt 长度激增，预填充主导了首 Token 延迟。", "平均 Prompt Token 数上升，预填充和 TTFT 上升，TPOT 正常"},
	m.CausePrefixCacheMiss:       {"前缀缓存未命中", "共享前缀的流量发生变化，前缀缓存不再命中。", "前缀命中率下降，Prompt Token/s 上升，TTFT 上升，KV 未满"},
	m.CauseGPUThrottling:         {"GPU 降频", "温度或功耗上限压低了时钟频率。", "SM 时钟下降，温度或功耗到达上限，所有延迟上升"},
	m.CauseTransportLatency:      {"传输延迟", "慢的是网络、网关或流式传输链路，而不是引擎。", "网关 E2E 上升而引擎 E2E 正常"},
	m.CauseEngineErrors:          {"引擎错误", "引擎请求失败：OOM、崩溃或中止。", "错误率上升"},
	m.CauseHostOverhead:          {"主机侧开销", "CPU 侧瓶颈：分词、调度或 kernel 启动开销。", "SM 利用率低、延迟上升，而批次并不小"},
	m.CauseUnknown:               {"未知异常", "指标异常，但不符合任何已知模式。", "—"},
	m.CauseNone:                  {"无异常", "没有任何异常：误报。", "所有指标都在基线之内"},
}

// metricText is a metric's short label and full name.
type metricText struct{ Label, Name string }

var zhMetrics = map[string]metricText{
	m.GatewayE2E:       {"网关 E2E", "网关端到端延迟"},
	m.E2E:              {"E2E", "引擎端到端延迟"},
	m.E2EP99:           {"E2E p99", "引擎端到端延迟 p99"},
	m.TTFT:             {"TTFT", "首 Token 延迟 TTFT"},
	m.TTFTP99:          {"TTFT p99", "首 Token 延迟 p99"},
	m.TPOT:             {"TPOT", "每 Token 输出延迟 TPOT"},
	m.TPOTP99:          {"TPOT p99", "每 Token 输出延迟 p99"},
	m.QueueTime:        {"排队时间", "排队时间"},
	m.PrefillTime:      {"预填充", "预填充时间"},
	m.DecodeTime:       {"解码", "解码时间"},
	m.ThroughputRPS:    {"吞吐", "吞吐量"},
	m.ArrivalRPS:       {"到达", "请求到达速率"},
	m.PromptTPS:        {"Prompt Token", "Prompt Token/s"},
	m.GenerationTPS:    {"生成 Token", "生成 Token/s"},
	m.RunningSeqs:      {"运行序列", "运行中批次"},
	m.QueueDepth:       {"队列深度", "队列深度"},
	m.MeanPromptTokens: {"Prompt 长度", "平均 Prompt 长度"},
	m.SMUtil:           {"SM 活跃", "SM 活跃度"},
	m.TensorActive:     {"Tensor 活跃", "Tensor Core 活跃度"},
	m.DRAMActive:       {"显存带宽", "显存带宽利用率"},
	m.GPUMemUsedFrac:   {"显存", "已用显存"},
	m.KVCacheUsage:     {"KV Cache", "KV Cache 使用率"},
	m.SMClock:          {"SM 时钟", "SM 时钟频率"},
	m.MemClock:         {"显存时钟", "显存时钟频率"},
	m.Power:            {"功耗", "板卡功耗"},
	m.GPUTemp:          {"温度", "GPU 温度"},
	m.KVCacheHitRate:   {"前缀命中率", "前缀缓存命中率"},
	m.RejectionRate:    {"草稿拒绝率", "草稿 Token 拒绝率"},
	m.ErrorRate:        {"错误率", "错误率"},
	m.PreemptionRate:   {"抢占", "抢占速率"},
	m.AbortRate:        {"客户端中止", "客户端中止率"},
	m.APIErrorRate:     {"API 5xx", "API 5xx 比例"},
	m.XIDErrors:        {"XID 错误 GPU", "出现 XID 错误的 GPU"},
	m.QueueCapacity:    {"等待容量", "等待容量的请求"},
	m.CachedPromptTPS:  {"缓存 Prompt Token", "命中缓存的 Prompt Token/s"},
	m.SpecAcceptLength: {"接受长度", "投机采样接受长度"},
}

var zhEvidence = evidenceFormats{
	NoBaseline: "%s 为 %s（无基线）。",
	Within:     "%s 为 %s，处于基线 %s 之内（z %+.1f）。",
	Times:      "%s 为 %s，是基线 %[4]s 的 %.1[3]f 倍（z %+.1[5]f）。",
	Up:         "%s 为 %s，高于基线 %s（z %+.1f）。",
	Down:       "%s 为 %s，低于基线 %s（z %+.1f）。",
}

var zhRemarks = map[string]string{
	remarkKVFull:        "超过约 90% 的拐点后，每个新序列都会触发一次抢占。",
	remarkKVRoom:        "缓存仍有余量，未命中来自流量本身，而非缓存大小。",
	remarkPreempting:    "被抢占的序列要从 Prompt 开始重新计算。",
	remarkHitsLost:      "丢失的前缀命中变成了预填充工作量。",
	remarkAtCeiling:     "吞吐停在上限，不再跟随需求增长。",
	remarkSaturated:     "GPU 已到饱和拐点，排队将从此非线性增长。",
	remarkIdle:          "SM 有很大一部分时间处于空闲。",
	remarkSmallBatch:    "批次太小，算力没有用满。",
	remarkRejected:      "每个被拒绝的草稿都要花一步只保留一个 Token。",
	remarkBandwidth:     "解码步受 HBM 带宽限制。",
	remarkDecodeBound:   "每个解码步都要从 HBM 读取权重和 KV Cache。",
	remarkLongPrompts:   "预填充开销随 Prompt 长度增长。",
	remarkClockDown:     "时钟降低会拖慢每个 kernel。",
	remarkHot:           "GPU 接近温度上限。",
	remarkOutsideEngine: "多出来的时间花在引擎之外。",
	remarkEngineCalm:    "引擎本身并没有变慢。",
	remarkFailing:       "失败的请求既浪费算力，也是用户可见的错误。",
	remarkStarved:       "GPU 在等待主机。",
	remarkBatchFine:     "批次并不小，GPU 本应保持繁忙。",
	remarkCapped:        "请求在等待，而批次却变小了：调度器接纳的序列少于 GPU 能承载的数量。",
	remarkPowerPerToken: "每生成一个 Token 板卡消耗更多功率：GPU 每步工作更久。",
	remarkFrontend:      "首 Token 时间的增长不在引擎的排队和预填充里：请求卡在 API 服务器（分词、输入处理）。",
	remarkCachedContext: "Prompt 变长了，但增长部分由前缀缓存命中：预填充没有增加，每个解码步要读取的上下文却更长了。",
	remarkAdmittedLoad:  "多出来的负载被接纳进了运行中的批次：每步变慢的速度超过负载增长，这是引擎已饱和的迹象。",
	"abs_errors":        "健康的引擎失败请求远低于 1%。",
	"abs_kv":            "超过约 90% 的拐点后，每个新序列都会触发一次抢占。",
	"abs_queue":         "队列比运行中的批次还深：引擎接纳不了这些请求。",
	"abs_idle":          "请求在等待，而批次很小、SM 空闲。",
	"abs_clock":         "繁忙的数据中心 GPU 若低于约 1,400 MHz 或接近 85-90 C，说明受到温度或功耗上限的压制。",
	"abs_gateway":       "健康的网关只增加几毫秒；这么多时间花在了引擎之外。",
	"abs_rejected":      "有效的草稿模型大部分 Token 都会被接受。",
	"abs_dram":          "HBM 带宽已到饱和拐点。",
	"abs_host":          "大批次本应让 SM 保持繁忙；时间花在了别处。",
}

// zhNotes are the notes' shapes: the English format (the constants of
// texts.go and the kernel-trace notes) and its translation.
var zhNotes = func() []noteShape {
	shapes := []noteShape{
		{en: noteNoBaseline, literal: true, zh: "没有可用的历史数据：诊断只依据绝对上限，因此置信度被下调。"},
		{en: noteShortBaseline, zh: "只有部分指标有基线（%.0f%%），置信度相应下调。"},
		{en: noteAbsent, zh: "无法检查 %s：%s；依赖它的规则已停用。"},
		{en: noteNoProfiling, literal: true, zh: "未采集 DCGM profiling 字段（DCGM_FI_PROF_DRAM_ACTIVE、_SM_ACTIVE、_PIPE_TENSOR_ACTIVE），与 dcgm-exporter 的默认计数器一致：GPU 活动取自 GPU_UTIL，即任一 kernel 运行的时间占比，只要引擎繁忙就接近 100%，因此根因由步耗时、批大小、Token 速率和功耗推断，置信度被下调。"},
		{en: noteOverturned, zh: "相似案例把结论从「%s」改为「%s」：最近的 %[4]d 个已标注案例中有 %[3]d 个是该根因（占相似度加权投票的 %.0[5]f%%），而规则的置信度为 %.0[6]f%%。"},
		{en: noteExplained, zh: "两个故障同时发生：%s 和 %s。%s 的表现强度达到其已标注案例的第 %.0f 百分位，%s 只有第 %.0f 百分位，因此尽管 %s 牵动的指标更多，仍判定为 %s。"},
		{en: noteShowedFirst, zh: "两个故障同时发生：%s 和 %s。%s 在本次快照之前的几分钟里最先出现并一直持续，因此尽管 %s 现在牵动的指标更多，仍判定 %s 为主要故障。"},
		{en: noteOrderKept, zh: "相似案例指向 %s，但 %s 在本次快照之前的几分钟里最先出现，因此仍是主要故障。"},
		{en: noteMildFault, zh: "没有单个指标越过异常阈值，但 %s 的各项迹象合起来超过了 %.0f%% 的已标注健康案例。"},
		{en: "The kernel trace supports %s.", zh: "kernel trace 支持 %s。"},
		{en: "The metrics matched no known pattern; the kernel trace points at %s.", zh: "指标不符合任何已知模式；kernel trace 指向 %s。"},
	}
	for i := range shapes {
		shapes[i].re = noteRegexp(shapes[i].en, shapes[i].literal)
	}
	return shapes
}()

// zhProposed translates the proposed values that are words.
var zhProposed = map[string]string{
	"double":                               "翻倍",
	"half":                                 "减半",
	"current + 2":                          "当前值 + 2",
	"current x 2":                          "当前值 × 2",
	"current x 0.75":                       "当前值 × 0.75",
	"the p99 of expected traffic":          "预期流量的 p99",
	"the p99 of real prompt+output length": "真实 Prompt+输出长度的 p99",
}

// zhEffectWords translate the words inside effect sizes, longest first.
var zhEffectWords = [][2]string{
	{"back to engine E2E + baseline gap", "回到引擎 E2E + 基线差值"},
	{"back to engine E2E", "回到引擎 E2E"},
	{"back to baseline", "回到基线"},
	{" while saturated", "（饱和时）"},
	{" on the others", "（其余副本）"},
	{"+rejected share", "+被拒绝的比例"},
	{"+shed share", "+被削减的流量比例"},
	{"after the fix", "修复后"},
	{"evens out", "趋于均衡"},
	{"-gap", "-差值"},
	{" pts", " 个百分点"},
	{" pt", " 个百分点"},
}
