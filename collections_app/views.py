"""Collection pages. Permission checks come from accounts.permissions, as in the API."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.permissions import get_collection_for_edit, require_teacher
from collections_app.forms import CollectionForm


@login_required
@require_http_methods(["GET", "POST"])
def collection_create(request):
    require_teacher(request.user)
    form = CollectionForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        collection = form.save(commit=False)
        collection.owner = request.user
        collection.save()
        form.save_m2m()
        messages.success(request, f"Collection “{collection.name}” created. Upload files to it next.")
        return redirect("collection_detail", pk=collection.pk)
    return render(request, "collections/form.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def collection_detail(request, pk: int):
    collection = get_collection_for_edit(request.user, pk)
    form = CollectionForm(request.POST or None, instance=collection, owner=collection.owner)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Settings saved.")
        return redirect("collection_detail", pk=collection.pk)
    files = collection.files.all()
    return render(request, "collections/detail.html", {"collection": collection, "form": form, "files": files})


@login_required
@require_POST
def collection_delete(request, pk: int):
    collection = get_collection_for_edit(request.user, pk)
    name = collection.name
    collection.delete()
    messages.success(request, f"Collection “{name}” deleted.")
    return redirect("home")
