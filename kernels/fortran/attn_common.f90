! Pieces the Fortran kernels share: a vectorizable exp, tile sizes, packing,
! the tiled online-softmax forward, and the float64 attention references
! used by --check.  Arrays are (d, n): column i is row i of the (n, d) matrix.
module attn_common
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use omp_lib
  implicit none
  private
  public :: bk, bq, check_all_rows, check_nrows, exp_fast, pack_tiles, memopt_forward
  public :: check_rows, ref_attention_rows, ref_attention_backward

  ! keys per tile (compile-time: fixed inner trip counts) and query rows per tile
  integer(int64), parameter :: bk = 64, bq = 32
  ! forward checks cover all rows up to check_all_rows, else check_nrows
  ! evenly spread rows (the float64 reference costs O(n d) per row)
  integer(int64), parameter :: check_all_rows = 4096, check_nrows = 512

contains

  ! exp(x) in float, a few ulp (Cephes expf polynomial), written so that
  ! loops calling it vectorize: the library expf does not.
  elemental real(real32) function exp_fast(x0)
    real(real32), intent(in) :: x0
    real(real32) :: x, t, f, p
    integer :: ni
    x = min(max(x0, -87.0_real32), 88.0_real32)
    t = x * 1.44269504088896341_real32
    ni = int(t + sign(0.5_real32, t))          ! round to nearest
    f = x - real(ni, real32) * 0.693359375_real32
    f = f + real(ni, real32) * 2.12194440e-4_real32
    p = 1.9875691500e-4_real32
    p = p * f + 1.3981999507e-3_real32
    p = p * f + 8.3334519073e-3_real32
    p = p * f + 4.1665795894e-2_real32
    p = p * f + 1.6666665459e-1_real32
    p = p * f + 5.0000001201e-1_real32
    exp_fast = (p * f * f + f + 1.0_real32) * transfer(ishft(ni + 127, 23), 1.0_real32)
  end function exp_fast

  ! kp(bk, d, tiles): tile t holds rows (t-1)*bk+1.. transposed, zero padded
  subroutine pack_tiles(x, kp, n, d)
    integer(int64), intent(in) :: n, d
    real(real32), intent(in) :: x(d, n)
    real(real32), intent(out) :: kp(bk, d, (n + bk - 1) / bk)
    integer(int64) :: t, j, c, nj
    !$omp parallel do schedule(static) private(j, c, nj)
    do t = 1, (n + bk - 1) / bk
      nj = min(bk, n - (t - 1) * bk)
      do c = 1, d
        do j = 1, nj
          kp(j, c, t) = x(c, (t - 1) * bk + j)
        end do
        kp(nj + 1:bk, c, t) = 0
      end do
    end do
    !$omp end parallel do
  end subroutine pack_tiles

  ! One query tile (rows i0..i1) against all key tiles: S = Q K^T on bk
  ! keys, online softmax (running max m, sum l), O += P V.
  subroutine memopt_tile(q, kp, v, o, lse, want_lse, n, d, i0, i1)
    integer(int64), intent(in) :: n, d, i0, i1
    real(real32), intent(in) :: q(d, n), kp(bk, d, *), v(d, n)
    real(real32), intent(inout) :: o(d, n), lse(n)
    logical, intent(in) :: want_lse
    real(real32) :: s(bk), m(bq), l(bq), scale, qc, mx, corr, sm
    integer(int64) :: t, i, c, j, j0, nj
    scale = 1.0_real32 / sqrt(real(d, real32))
    m = -huge(1.0_real32)
    l = 0
    o(:, i0:i1) = 0
    do t = 1, (n + bk - 1) / bk
      j0 = (t - 1) * bk
      nj = min(bk, n - j0)
      do i = i0, i1
        s = 0
        do c = 1, d
          qc = q(c, i) * scale
          s = s + qc * kp(:, c, t)
        end do
        if (nj < bk) s(nj + 1:) = -huge(1.0_real32)
        mx = max(m(i - i0 + 1), maxval(s))
        corr = exp_fast(m(i - i0 + 1) - mx)
        s = exp_fast(s - mx)
        sm = sum(s)
        m(i - i0 + 1) = mx
        l(i - i0 + 1) = l(i - i0 + 1) * corr + sm
        if (corr /= 1.0_real32) o(:, i) = o(:, i) * corr
        do j = 1, nj
          o(:, i) = o(:, i) + s(j) * v(:, j0 + j)
        end do
      end do
    end do
    do i = i0, i1
      o(:, i) = o(:, i) / l(i - i0 + 1)
      if (want_lse) lse(i) = m(i - i0 + 1) + log(l(i - i0 + 1))
    end do
  end subroutine memopt_tile

  ! Tiled forward, parallel over bq-row query tiles (schedule static).
  ! kp: bk*d*ceil(n/bk) floats.  lse(n) is written when want_lse.
  subroutine memopt_forward(q, k, v, o, lse, want_lse, kp, n, d)
    integer(int64), intent(in) :: n, d
    real(real32), intent(in) :: q(d, n), k(d, n), v(d, n)
    real(real32), intent(inout) :: o(d, n), lse(*), kp(bk, d, *)
    logical, intent(in) :: want_lse
    integer(int64) :: t
    call pack_tiles(k, kp, n, d)
    !$omp parallel do schedule(static)
    do t = 1, (n + bq - 1) / bq
      call memopt_tile(q, kp, v, o, lse, want_lse, n, d, (t - 1) * bq + 1, min(t * bq, n))
    end do
    !$omp end parallel do
  end subroutine memopt_forward

  function check_rows(n) result(rows)
    integer(int64), intent(in) :: n
    integer(int64), allocatable :: rows(:)
    integer(int64) :: m, r
    m = merge(n, check_nrows, n <= check_all_rows)
    allocate (rows(m))
    do r = 1, m
      if (m == n) then
        rows(r) = r
      else
        rows(r) = 1 + int(real(r - 1, real64) * real(n - 1, real64) / real(m - 1, real64), int64)
      end if
    end do
  end function check_rows

  ! p(n) = softmax(q_i K^T / sqrt(d)) in double
  subroutine ref_probs(qi, k, n, d, p)
    integer(int64), intent(in) :: n, d
    real(real32), intent(in) :: qi(d), k(d, n)
    real(real64), intent(out) :: p(n)
    integer(int64) :: j
    do j = 1, n
      p(j) = dot_product(real(qi, real64), real(k(:, j), real64)) / sqrt(real(d, real64))
    end do
    p = exp(p - maxval(p))
    p = p / sum(p)
  end subroutine ref_probs

  ! out(d, nrows): O rows for the listed query rows
  subroutine ref_attention_rows(q, k, v, n, d, rows, out)
    integer(int64), intent(in) :: n, d, rows(:)
    real(real32), intent(in) :: q(d, n), k(d, n), v(d, n)
    real(real64), intent(out) :: out(d, size(rows))
    real(real64), allocatable :: p(:)
    integer(int64) :: r, j
    !$omp parallel private(p, j)
    allocate (p(n))
    !$omp do schedule(dynamic, 4)
    do r = 1, size(rows)
      call ref_probs(q(:, rows(r)), k, n, d, p)
      out(:, r) = 0
      do j = 1, n
        out(:, r) = out(:, r) + p(j) * real(v(:, j), real64)
      end do
    end do
    !$omp end do
    deallocate (p)
    !$omp end parallel
  end subroutine ref_attention_rows

  ! Textbook backward in double, P one row at a time: dV = P^T dO,
  ! dS = P * (dO V^T - rowsum), dQ = dS K s, dK = dS^T Q s.
  subroutine ref_attention_backward(q, k, v, g, n, d, dq, dk, dv)
    integer(int64), intent(in) :: n, d
    real(real32), intent(in) :: q(d, n), k(d, n), v(d, n), g(d, n)
    real(real64), intent(out) :: dq(d, n), dk(d, n), dv(d, n)
    real(real64), allocatable :: p(:), dp(:), part(:, :, :, :)
    real(real64) :: s, dsum, ds
    integer(int64) :: i, j
    integer :: t, me
    s = 1.0_real64 / sqrt(real(d, real64))
    ! per-thread dK, dV partials on the heap (an OpenMP array reduction
    ! would put private copies on the thread stacks)
    allocate (part(d, n, 2, omp_get_max_threads()))
    part = 0
    !$omp parallel private(p, dp, dsum, ds, j, me)
    allocate (p(n), dp(n))
    me = omp_get_thread_num() + 1
    !$omp do schedule(dynamic, 4)
    do i = 1, n
      call ref_probs(q(:, i), k, n, d, p)
      do j = 1, n
        dp(j) = dot_product(real(g(:, i), real64), real(v(:, j), real64))
      end do
      dsum = sum(p * dp)
      dq(:, i) = 0
      do j = 1, n
        ds = p(j) * (dp(j) - dsum)
        dq(:, i) = dq(:, i) + s * ds * real(k(:, j), real64)
        part(:, j, 1, me) = part(:, j, 1, me) + s * ds * real(q(:, i), real64)
        part(:, j, 2, me) = part(:, j, 2, me) + p(j) * real(g(:, i), real64)
      end do
    end do
    !$omp end do
    deallocate (p, dp)
    !$omp end parallel
    dk = 0
    dv = 0
    do t = 1, size(part, 4)
      dk = dk + part(:, :, 1, t)
      dv = dv + part(:, :, 2, t)
    end do
  end subroutine ref_attention_backward

end module attn_common
