package i18n

// tables are the catalog's tables, one per area of the console. Each
// entry gives its English and Chinese text side by side, so that a
// missing translation shows in review; the tests check every entry has
// both. Words follow docs/glossary-zh.md.
var tables = [][]Msg{common, incidentPages, diagnosisTexts, exportTexts, cliTexts}

// common: the page frame, shared form words, statuses and times.
var common = []Msg{
	{Key: "nav.label", En: "Main", Zh: "主导航"},
	{Key: "nav.overview", En: "Overview", Zh: "总览"},
	{Key: "nav.incidents", En: "Incidents", Zh: "事件"},
	{Key: "nav.knowledge", En: "Knowledge base", Zh: "知识库"},
	{Key: "nav.accuracy", En: "Accuracy", Zh: "准确率"},
	{Key: "nav.storage", En: "Storage", Zh: "存储"},
	{Key: "nav.faults", En: "Fault injection", Zh: "故障注入"},
	{Key: "nav.admin", En: "Admin", Zh: "管理"},
	{Key: "layout.insecure", En: "This console is reachable from other machines without authentication (--insecure-no-auth): anyone who can reach it can read and change the archive.", Zh: "此控制台未启用认证即可被其他机器访问（--insecure-no-auth）：任何能访问它的人都可以读取和修改事件档案。"},
	{Key: "layout.since", En: "since", Zh: "开始于"},
	{Key: "layout.sign_out", En: "Sign out", Zh: "退出登录"},
	{Key: "form.as", En: "as", Zh: "身份："},
	{Key: "form.your_name", En: "Your name", Zh: "你的名字"},
	{Key: "list.sep", En: ", ", Zh: "、"},

	{Key: "status.ok", En: "OK", Zh: "正常"},
	{Key: "status.info", En: "Info", Zh: "提示"},
	{Key: "status.warning", En: "Warning", Zh: "警告"},
	{Key: "status.critical", En: "Critical", Zh: "严重"},
	{Key: "status.no_data", En: "No data", Zh: "无数据"},
	{Key: "severity.critical", En: "critical", Zh: "严重"},
	{Key: "severity.warning", En: "warning", Zh: "警告"},
	{Key: "severity.info", En: "info", Zh: "提示"},
	{Key: "severity.unknown", En: "unknown", Zh: "未知"},

	{Key: "time.just_now", En: "just now", Zh: "刚刚"},
	{Key: "time.min_ago", En: "%d min ago", Zh: "%d 分钟前"},
	{Key: "time.h_ago", En: "%d h ago", Zh: "%d 小时前"},
	{Key: "time.days_ago", En: "%d days ago", Zh: "%d 天前"},

	{Key: "error.parameter", En: "Parameter", Zh: "参数"},
	{Key: "error.request_id", En: "Request id", Zh: "请求 ID"},
	{Key: "error.quote_it", En: "quote it when you report this.", Zh: "报告问题时请附上它。"},
	{Key: "error.back", En: "Back to the overview", Zh: "返回总览"},
	{Key: "error.language_unknown", En: "The console speaks English (en) and Chinese (zh-CN).", Zh: "控制台支持英文（en）和中文（zh-CN）。"},

	{Key: "login.title", En: "Sign in", Zh: "登录"},
	{Key: "login.name", En: "Name", Zh: "用户名"},
	{Key: "login.password", En: "Password", Zh: "密码"},
	{Key: "login.submit", En: "Sign in", Zh: "登录"},

	{Key: "filter.any", En: "any", Zh: "任意"},
	{Key: "filter.all", En: "all", Zh: "全部"},
	{Key: "filter.submit", En: "Filter", Zh: "筛选"},
	{Key: "pager.newest", En: "Newest", Zh: "最新"},
	{Key: "pager.older", En: "Older", Zh: "更早"},

	{Key: "field.model", En: "Model", Zh: "模型"},
	{Key: "field.instance", En: "Instance", Zh: "实例"},
	{Key: "field.cause", En: "Cause", Zh: "根因"},
	{Key: "field.review", En: "Review", Zh: "复核"},
	{Key: "field.severity", En: "Severity", Zh: "严重程度"},
	{Key: "field.from", En: "From", Zh: "开始"},
	{Key: "field.to", En: "To", Zh: "结束"},
	{Key: "field.opened", En: "Opened", Zh: "创建时间"},
	{Key: "field.incident", En: "Incident", Zh: "事件"},
	{Key: "field.scope", En: "Scope", Zh: "范围"},
	{Key: "field.diagnosis", En: "Diagnosis", Zh: "诊断"},
	{Key: "field.confidence", En: "Confidence", Zh: "置信度"},
	{Key: "field.trigger", En: "Trigger", Zh: "触发方式"},
	{Key: "field.alert", En: "Alert", Zh: "告警"},
	{Key: "field.window", En: "Window", Zh: "时间窗口"},
	{Key: "field.true_cause", En: "True cause", Zh: "真实根因"},
	{Key: "field.label", En: "Label", Zh: "标签"},
	{Key: "field.similarity", En: "Similarity", Zh: "相似度"},
	{Key: "field.shared_deviations", En: "Shared deviations", Zh: "共同偏离"},
	{Key: "field.root_cause", En: "Root cause", Zh: "根因"},
	{Key: "field.engine", En: "Engine", Zh: "引擎"},
	{Key: "field.metric", En: "Metric", Zh: "指标"},
	{Key: "field.value", En: "Value", Zh: "数值"},
	{Key: "field.baseline", En: "Baseline", Zh: "基线"},
	{Key: "field.finding", En: "Finding", Zh: "发现"},
	{Key: "field.score", En: "Score", Zh: "得分"},
	{Key: "field.source", En: "Source", Zh: "来源"},

	{Key: "dim.latency", En: "Latency", Zh: "延迟"},
	{Key: "dim.throughput", En: "Throughput", Zh: "吞吐"},
	{Key: "dim.utilization", En: "Utilization", Zh: "利用率"},
	{Key: "dim.quality", En: "Quality", Zh: "质量"},
}
