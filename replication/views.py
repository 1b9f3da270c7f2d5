"""Replication pages: pairs and tasks, a task's runs and what each dataset has on the target."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from appliance.auth import requires
from appliance.choices import Role
from appliance.web import add_service_errors, start_on_form, start_or_back
from replication import selectors, services
from replication.choices import PairStatus
from replication.forms import PairForm, QuotaForm, RestoreForm, RetentionForm, TaskForm
from replication.models import Pair, Task


def replication_list(request):
    return render(
        request,
        "replication/replication_list.html",
        {
            "pairs": selectors.pair_list(),
            "tasks": selectors.task_overview(),
            "is_admin": request.user.has_role(Role.ADMIN),
            "can_run": request.user.has_role(Role.OPERATOR),
        },
    )


@requires(read=Role.ADMIN, write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def pair_new(request):
    form = PairForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        started = start_on_form(form, services.pair_start, user=request.user, **form.cleaned_data)
        if started:
            return started
    return render(request, "replication/pair_form.html", {"form": form})


@requires(write=Role.ADMIN)
@require_POST
def pair_unpair(request, pk):
    return start_or_back(request, services.unpair_start, "replication-list", pair=get_object_or_404(Pair, pk=pk))


@requires(write=Role.ADMIN)
@require_POST
def pair_quota(request, pk):
    form = QuotaForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Quota: a size such as 2T or 500G.")
        return redirect("replication-list")
    pair = get_object_or_404(Pair, pk=pk)
    return start_or_back(request, services.pair_quota_start, "replication-list", pair=pair, **form.cleaned_data)


@requires(write=Role.ADMIN)
@require_POST
def pair_reviewed(request, pk):
    services.pair_intrusion_clear(pair=get_object_or_404(Pair, pk=pk))
    messages.success(request, "Marked as reviewed.")
    return redirect("replication-list")


@requires(read=Role.ADMIN, write=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def task_new(request):
    form = TaskForm(request.POST or None, pairs=selectors.pair_list().filter(status=PairStatus.PAIRED))
    if request.method == "POST" and form.is_valid():
        try:
            task = services.task_save(**form.service_args())
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            return redirect("replication-task", pk=task.pk)
    return render(request, "replication/task_form.html", {"form": form})


def task_detail(request, pk):
    task = get_object_or_404(selectors.task_list(), pk=pk)
    return _task_page(request, task, RestoreForm(snapshots=selectors.replica_snapshots(task=task)))


def _task_page(request, task, restore, status=200, retention=None):
    initial = {"keep": task.keep, "keep_hours": task.keep_hours, "prune_limit": task.prune_limit}
    return render(
        request,
        "replication/task_detail.html",
        {
            "task": task,
            "next_run": selectors.task_next_run(task=task),
            "retention": retention or RetentionForm(initial=initial),
            "datasets": selectors.dataset_states(task=task),
            "runs": selectors.task_runs(task=task, limit=30),
            "restore": restore,
            "is_admin": request.user.has_role(Role.ADMIN),
            "can_run": request.user.has_role(Role.OPERATOR),
        },
        status=status,
    )


@require_POST
def task_run(request, pk):
    task = get_object_or_404(Task, pk=pk)
    return start_or_back(request, services.task_run_start, reverse("replication-task", args=[pk]), task=task)


@requires(write=Role.ADMIN)
@require_POST
def task_delete(request, pk):
    task = get_object_or_404(Task, pk=pk)
    confirm = request.POST.get("confirm", "")
    return start_or_back(
        request, services.task_delete_start, reverse("replication-task", args=[pk]), task=task, confirm=confirm
    )


@requires(write=Role.ADMIN)
@require_POST
def task_retention(request, pk):
    task = get_object_or_404(selectors.task_list(), pk=pk)
    form = RetentionForm(request.POST)
    if form.is_valid():
        try:
            services.task_retention_save(task=task, **form.cleaned_data)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, "Retention saved: the next run prunes by it.")
            return redirect("replication-task", pk=pk)
    restore = RestoreForm(snapshots=selectors.replica_snapshots(task=task))
    return _task_page(request, task, restore, status=400, retention=form)


@requires(write=Role.ADMIN)
@require_POST
def task_resume_pruning(request, pk):
    services.task_pruning_resume(task=get_object_or_404(Task, pk=pk))
    messages.success(request, "Pruning resumes at the next run.")
    return redirect("replication-task", pk=pk)


@requires(write=Role.ADMIN)
@require_POST
def task_failover(request, pk):
    task = get_object_or_404(Task, pk=pk)
    confirm = request.POST.get("confirm", "")
    return start_or_back(
        request, services.failover_start, reverse("replication-task", args=[pk]), task=task, confirm=confirm
    )


@requires(write=Role.ADMIN)
@require_POST
def task_restore(request, pk):
    task = get_object_or_404(selectors.task_list(), pk=pk)
    form = RestoreForm(request.POST, snapshots=selectors.replica_snapshots(task=task))
    if form.is_valid():
        started = start_on_form(form, services.restore_start, task=task, user=request.user, **form.cleaned_data)
        if started:
            return started
    return _task_page(request, task, form, status=400)
