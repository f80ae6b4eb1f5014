"""The tuning page's Plotly figures, drawn from pages.components.tuning.view frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

IN_SCOPE, OUT_OF_SCOPE = "#2f5d8a", "#e39b3a"
CURRENT, RECOMMENDED, CHOSEN = "#c0392b", "#1e8449", "#6c3483"
BROKEN = "#d5d8dc"
CURVE_COLORS = {"Answer rate (in scope)": IN_SCOPE, "False-answer rate": OUT_OF_SCOPE,
                "Recall@k": "#17a2b8", "F1": "#1e8449"}
Point = tuple[float, float]  # (w_dense, threshold)


def _layout(fig: go.Figure, title: str, height: int = 380) -> go.Figure:
    fig.update_layout(title={"text": title, "font": {"size": 15}}, height=height,
                      margin={"l": 10, "r": 10, "t": 48, "b": 10},
                      legend={"orientation": "h", "y": -0.2, "x": 0})
    return fig


def heatmap_figure(matrix: pd.DataFrame, title: str, recommended: Point, current: Point,
                   chosen: Point) -> go.Figure:
    """The objective over weight × threshold; NaN cells (limit broken) are drawn grey."""
    x, y, z = list(matrix.columns), list(matrix.index), matrix.to_numpy()
    fig = go.Figure()
    if np.isnan(z).any():
        title += "<br><sup>grey: the false-answer limit is broken there</sup>"
        fig.add_heatmap(z=np.where(np.isnan(z), 1.0, np.nan), x=x, y=y, showscale=False,
                        colorscale=[[0, BROKEN], [1, BROKEN]], name="limit broken",
                        hovertemplate="dense %{y:.2f} · threshold %{x:.2f}<br>false-answer "
                                      "limit broken<extra></extra>")
    fig.add_heatmap(z=z, x=x, y=y, zmin=0, zmax=1, colorscale="Viridis",
                    colorbar={"thickness": 12, "len": 0.9}, name="objective",
                    hovertemplate="dense %{y:.2f} · threshold %{x:.2f}<br>objective %{z:.3f}"
                                  "<extra></extra>")
    marks = [("recommended", recommended, "star", RECOMMENDED, 18),
             ("current", current, "circle-open", CURRENT, 14)]
    if chosen != recommended:
        marks.append(("chosen", chosen, "diamond-open", CHOSEN, 14))
    for name, (w, t), symbol, color, size in marks:
        fig.add_scatter(x=[t], y=[w], mode="markers", name=f"{name} ({w:.2f}, {t:.2f})",
                        marker={"symbol": symbol, "size": size, "color": color,
                                "line": {"color": "white" if symbol == "star" else color,
                                         "width": 1.5 if symbol == "star" else 3}},
                        hovertemplate=f"{name}: dense {w:.2f} · threshold {t:.2f}"
                                      "<extra></extra>")
    # markers would pad the autorange; pin the axes to the cells' edges
    fig.update_xaxes(title="threshold", range=[-0.005, 1.005], showgrid=False, zeroline=False)
    fig.update_yaxes(title="dense weight", range=[-0.025, 1.025], showgrid=False, zeroline=False)
    return _layout(fig, title, height=420)


def _vline(fig: go.Figure, x: float, label: str, color: str, dash: str, y: float) -> None:
    fig.add_vline(x=x, line={"color": color, "dash": dash, "width": 2})
    fig.add_annotation(x=x, y=y, yref="paper", text=f"{label} {x:.2f}", showarrow=False,
                       xanchor="left", xshift=4, font={"color": color, "size": 11},
                       bgcolor="rgba(255,255,255,0.8)")


def curves_figure(frame: pd.DataFrame, w_dense: float, recommended_t: float, current_t: float,
                  chosen_t: float, max_far: float | None = None) -> go.Figure:
    fig = px.line(frame, x="threshold", y="value", color="metric",
                  color_discrete_map=CURVE_COLORS)
    if max_far is not None:
        fig.add_hline(y=max_far, line={"color": OUT_OF_SCOPE, "dash": "dot", "width": 1.5},
                      annotation_text=f"false-answer limit {100 * max_far:g} %",
                      annotation_position="bottom right",
                      annotation_font={"color": OUT_OF_SCOPE, "size": 11})
    fig.update_traces(hovertemplate="threshold %{x:.2f}: %{y:.3f}")
    _vline(fig, current_t, "current", CURRENT, "dash", 1.0)
    _vline(fig, recommended_t, "recommended", RECOMMENDED, "dash", 0.9)
    if chosen_t != recommended_t:
        _vline(fig, chosen_t, "chosen", CHOSEN, "dot", 0.8)
    fig.update_xaxes(title="threshold", range=[0, 1])
    fig.update_yaxes(title=None, range=[0, 1.03])
    fig.update_layout(legend_title_text=None)
    return _layout(fig, f"Against the threshold at dense weight {w_dense:.2f}", height=420)


def distribution_figure(frame: pd.DataFrame, w_dense: float, threshold: float,
                        recommended_t: float, current_t: float) -> go.Figure:
    """Best blended score per question, in vs out of scope, with the threshold lines."""
    fig = px.histogram(frame, x="best_blended", color="scope", nbins=50, barmode="overlay",
                       opacity=0.7, marginal="box", hover_data=["question"],
                       category_orders={"scope": ["in scope", "out of scope"]},
                       color_discrete_map={"in scope": IN_SCOPE, "out of scope": OUT_OF_SCOPE})
    _vline(fig, current_t, "current", CURRENT, "dash", 0.72)
    if threshold == recommended_t:
        _vline(fig, threshold, "recommended", RECOMMENDED, "dash", 0.62)
    else:
        _vline(fig, threshold, "chosen", CHOSEN, "dot", 0.62)
    fig.update_xaxes(title="best blended score", range=[0, 1], row=1)
    fig.update_yaxes(title="questions", row=1)
    fig.update_layout(legend_title_text=None)
    return _layout(fig, f"Best blended score per question at dense weight {w_dense:.2f}",
                   height=400)


def risk_coverage_figure(frame: pd.DataFrame, target: float,
                         gates: dict[str, dict | None]) -> go.Figure:
    """Accuracy against the answer rate as the confidence gate rises (right to left), one line
    per operating point, the target accuracy, and the gate it implies on each line."""
    colors = {"current": CURRENT, "recommended": RECOMMENDED, "chosen": CHOSEN}
    fig = go.Figure()
    for name, rows in frame.groupby("point", sort=False):
        color = colors.get(str(name), IN_SCOPE)
        fig.add_scatter(x=rows["answer_rate"], y=rows["accuracy"], mode="lines+markers",
                        name=str(name), line={"color": color, "shape": "hv"},
                        marker={"size": 5, "color": color}, customdata=rows[["gate", "answered"]],
                        hovertemplate="gate %{customdata[0]:.3f}: %{customdata[1]} answered, "
                                      "answer rate %{x:.2f}, accuracy %{y:.3f}<extra></extra>")
        if (chosen := gates.get(str(name))) and chosen.get("gate") is not None:
            fig.add_scatter(x=[chosen["answer_rate"]], y=[chosen["accuracy"]], mode="markers",
                            name=f"{name}: gate {chosen['gate']:.3f}",
                            marker={"symbol": "star", "size": 16, "color": color,
                                    "line": {"color": "white", "width": 1.5}},
                            hovertemplate=f"{name}: gate {chosen['gate']:.3f}<extra></extra>")
    fig.add_hline(y=target, line={"color": OUT_OF_SCOPE, "dash": "dot", "width": 1.5},
                  annotation_text=f"target accuracy {target:.2f}",
                  annotation_position="bottom left",
                  annotation_font={"color": OUT_OF_SCOPE, "size": 11})
    fig.update_xaxes(title="answer rate (judged questions answered at or above the gate)",
                     range=[0, 1.02])
    fig.update_yaxes(title="accuracy of those answers", range=[0, 1.03])
    return _layout(fig, "Risk–coverage: raising the confidence gate", height=400)
